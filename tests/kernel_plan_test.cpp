// The GPU kernel plan, decided before any weight is read: which GPUs a build's architectures run
// on (arch-specific targets only on their own capability, plain SASS within its major version,
// PTX through the driver with a warning), what stops a run (too old a GPU)
// with the rebuild or the flag that would work, and one line per choice.
#include <gtest/gtest.h>

#include "engine/device_choice.h"
#include "golden_reference.h"
#include "ops/backend.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

const std::vector<std::string> kDefault = {"90a"}, kRelease = {"90a", "100a", "120a"};

// The plan for a GPU of capability `cc`, the formats and cache of a one-rank Moonlight-like shape.
GpuKernelPlan plan_with(int cc, const std::vector<std::string>& built,
                        const std::set<WeightFormat>& formats, DType kv) {
    GpuInfo gpu{"Test GPU", cc};
    ModelConfig config;
    config.hidden_size = 2048;
    config.num_attention_heads = 16;
    config.kv_lora_rank = 512;
    config.qk_rope_head_dim = 64;
    config.n_routed_experts = 64;
    config.num_experts_per_tok = 6;
    config.moe_intermediate_size = 1408;
    config.vocab_size = 163840;
    return plan_gpu_kernels(
        gpu, built, KernelChoices::choose(gpu, kernel_shapes(config, formats, Layout(), kv)));
}

GpuKernelPlan plan(int cc, const std::vector<std::string>& built,
                   std::set<WeightFormat> formats = {WeightFormat::Dense}) {
    return plan_with(cc, built, formats, DType::BF16);
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(KernelPlan, BuildArchitecturesAgainstTheGpu) {
    EXPECT_EQ(plan(90, kDefault).stop, "");  // H100, H200
    for (int cc : {100, 120, 89, 80}) {
        SCOPED_TRACE(cc);
        auto p = plan(cc, kDefault);  // an sm_90a build on B200, RTX 5090, L40S, A100
        EXPECT_TRUE(has(p.stop, "sm_" + std::to_string(cc))) << p.stop;
        EXPECT_TRUE(has(p.stop, "CMAKE_CUDA_ARCHITECTURES=" + std::to_string(cc) + "a")) << p.stop;
        EXPECT_TRUE(has(p.stop, "make release")) << p.stop;
        EXPECT_TRUE(p.lines.empty());
    }
    for (int cc : {90, 100, 120}) EXPECT_EQ(plan(cc, kRelease).stop, "") << cc;
    EXPECT_TRUE(has(plan(103, kRelease).stop, "sm_103"));  // 100a is for exactly sm_100
    // Plain SASS runs on its major version at an equal or higher minor.
    EXPECT_EQ(plan(86, {"80-real"}).stop, "");
    EXPECT_FALSE(plan(90, {"80-real"}).stop.empty());
    // PTX runs on newer GPUs through the driver's compiler: allowed, with a warning.
    auto jit = plan(90, {"80"});
    EXPECT_EQ(jit.stop, "");
    ASSERT_FALSE(jit.lines.empty());
    EXPECT_TRUE(has(jit.lines[0], "compiles the PTX")) << jit.lines[0];
    EXPECT_FALSE(has(plan(90, kDefault).lines[0], "PTX"));
    // Older than sm_80: no BF16 tensor cores.
    auto old = plan(75, {"75"});
    EXPECT_TRUE(has(old.stop, "sm_80")) << old.stop;
    EXPECT_TRUE(has(old.stop, "--device cpu")) << old.stop;
}

TEST(KernelPlan, FormatsAndCache) {
    auto p = plan(90, kDefault, {WeightFormat::Dense, WeightFormat::Nvfp4});
    ASSERT_EQ(p.stop, "");
    std::string all;
    for (const auto& l : p.lines) all += l + "\n";
    EXPECT_TRUE(has(all, "GPU 0: Test GPU, sm_90; kernels built for sm_90a")) << all;
    EXPECT_TRUE(has(all, "BF16 linears")) << all;
    EXPECT_TRUE(has(all, "NVFP4 linears")) << all;
    EXPECT_FALSE(has(all, "FP8-block")) << all;
    EXPECT_TRUE(has(all, "latent cache in BF16")) << all;
    auto fp8 = plan_with(90, kDefault, {WeightFormat::Fp8Block}, DType::F8_E4M3);
    std::string f;
    for (const auto& l : fp8.lines) f += l + "\n";
    EXPECT_TRUE(has(f, "FP8-block linears") && has(f, "FP8 e4m3")) << f;
    // GGUF blocks run, dequantised to BF16 at load.
    auto gguf = plan(90, kDefault, {WeightFormat::Dense, WeightFormat::GgufBlock});
    EXPECT_EQ(gguf.stop, "");
    std::string g;
    for (const auto& l : gguf.lines) g += l + "\n";
    EXPECT_TRUE(has(g, "GGUF block-quantised linears: dequantised to BF16 at load")) << g;
}

// On a machine without a GPU (CI) auto is the CPU and cuda stops, naming the flag (with a GPU:
// tests/gpu/device_flag_test.cpp, GGUF included).
TEST(KernelPlan, DeviceChoice) {
    const std::string dir = golden_dir("kimi_k2");
    ModelConfig c = load_model_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);
    std::string note = "stale";
    if (cuda_device_count() > 0) {
        EXPECT_EQ(choose_device("auto", 1, c, ckpt, &note), Device::Cuda);
        return;
    }
    EXPECT_EQ(choose_device("auto", 1, c, ckpt, &note), Device::Cpu);
    EXPECT_TRUE(note.empty()) << note;
    try {
        choose_device("cuda", 1, c, ckpt, &note);
        ADD_FAILURE() << "--device cuda without a GPU was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2);
        EXPECT_TRUE(has(e.what(), "--device cuda")) << e.what();
    }
}

}  // namespace
}  // namespace myriad::testing
