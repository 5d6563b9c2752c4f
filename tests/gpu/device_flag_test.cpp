// --device auto on a machine with a GPU: the GPU for one rank, the CPU (saying why) for several;
// --device cuda is taken. The machine without a GPU: tests/device_flag_test.cpp.
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
    EXPECT_EQ(resolve_device("cuda", 1, &note), Device::Cuda);
    EXPECT_TRUE(note.empty()) << note;  // asked for: nothing to explain
    EXPECT_EQ(resolve_device("cpu", 1, &note), Device::Cpu);
}

// Before any weight is read: safetensors goldens run on the GPU with a kernel plan naming it; a
// GGUF of block-quantised weights falls back to the CPU under auto (saying why) and stops
// --device cuda.
TEST(GpuDeviceFlag, KernelPlanAndGgufFallback) {
    const std::string dir = golden_dir("kimi_k2");
    ModelConfig c = load_model_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);
    std::string note;
    EXPECT_EQ(choose_device("auto", 1, c, ckpt, &note), Device::Cuda);
    GpuKernelPlan plan = gpu_kernel_plan(c, ckpt, DType::BF16);
    ASSERT_EQ(plan.stop, "");
    ASSERT_FALSE(plan.lines.empty());
    EXPECT_NE(plan.lines[0].find("sm_"), std::string::npos) << plan.lines[0];
    const std::string gguf =
        std::string(MYRIAD_GGUF_GOLDENS_DIR) + "/q4_k_m/tiny-Q4_K_M.gguf";
    ModelConfig gc = load_model_config(gguf);
    Checkpoint gk = Checkpoint::open(gguf);
    EXPECT_EQ(choose_device("auto", 1, gc, gk, &note), Device::Cpu);
    EXPECT_NE(note.find("GGUF"), std::string::npos) << note;
    EXPECT_THROW(choose_device("cuda", 1, gc, gk, &note), Error);
}

}  // namespace
}  // namespace myriad::testing
