// --device auto on a machine with a GPU: the GPU for one rank, the CPU (saying why) for several;
// --device cuda is taken. The machine without a GPU: tests/device_flag_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "ops/backend.h"

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

}  // namespace
}  // namespace myriad::testing
