// --device auto on a machine with a GPU: the GPU for one rank, and for several when --devices
// places them, else the CPU (saying why); --device cuda is taken. The machine without a GPU:
// tests/device_flag_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "engine/device_choice.h"
#include "golden_reference.h"
#include "ops/backend.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

TEST(GpuDeviceFlag, AutoPicksTheGpuForOneRank) {
    ASSERT_GT(cuda_device_count(), 0);
    std::string note;
    EXPECT_EQ(resolve_device("auto", 1, &note), Device::Cuda);
    EXPECT_NE(note.find("device: cuda"), std::string::npos) << note;
    EXPECT_EQ(resolve_device("auto", 2, &note), Device::Cpu);
    EXPECT_NE(note.find("--tp 2"), std::string::npos) << note;
    EXPECT_EQ(resolve_device("auto", 2, &note, "0,0"), Device::Cuda);
    EXPECT_THROW(resolve_device("cuda", 2 * cuda_device_count(), &note), Error);
    EXPECT_EQ(resolve_device("cuda", 1, &note), Device::Cuda);
    EXPECT_TRUE(note.empty()) << note;  // asked for: nothing to explain
    EXPECT_EQ(resolve_device("cpu", 1, &note), Device::Cpu);
}

// Before any weight is read: safetensors goldens run on the GPU with a kernel plan naming it, and
// so does a GGUF of block-quantised weights (dequantised to BF16 at load).
TEST(GpuDeviceFlag, KernelPlanAndGguf) {
    const std::string dir = golden_dir("kimi_k2");
    ModelConfig c = load_model_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);
    std::string note;
    EXPECT_EQ(choose_device("auto", 1, c, ckpt, &note), Device::Cuda);
    GpuKernelPlan plan = gpu_kernel_plan(c, ckpt, DType::BF16);
    ASSERT_EQ(plan.stop, "");
    ASSERT_FALSE(plan.lines.empty());
    EXPECT_NE(plan.lines[0].find("sm_"), std::string::npos) << plan.lines[0];
    // The choices count this GPU's multiprocessors, and the GPU's line says how many.
    EXPECT_GT(plan.choices.gpu.sms, 0);
    EXPECT_EQ(plan.choices.decode_wide_pairs, plan.choices.gpu.sms);
    EXPECT_EQ(plan.choices.decode_split_blocks, 4 * plan.choices.gpu.sms);
    EXPECT_NE(plan.lines[0].find(std::to_string(plan.choices.gpu.sms) + " multiprocessors"),
              std::string::npos)
        << plan.lines[0];
    EXPECT_EQ(plan.choices.shapes.heads, c.num_attention_heads);
    const std::string gguf = std::string(MYRIAD_GGUF_GOLDENS_DIR) + "/q4_k_m/tiny-Q4_K_M.gguf";
    ModelConfig gc = load_model_config(gguf);
    Checkpoint gk = Checkpoint::open(gguf);
    EXPECT_EQ(choose_device("auto", 1, gc, gk, &note), Device::Cuda) << note;
    EXPECT_EQ(choose_device("cuda", 1, gc, gk, &note), Device::Cuda) << note;
}

}  // namespace
}  // namespace myriad::testing
