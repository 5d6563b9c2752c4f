// --device: auto (the default) picks the GPU when one is usable and there is one per rank (or
// --devices places the ranks), else the CPU; cpu and cuda are taken as asked, cuda only where a
// GPU is; anything else is bad input naming the flag. On a machine without a GPU (CI) auto is
// the CPU and says nothing; on the GPU host (the gpu label's machine) the same test checks the
// GPU side.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

int exit_status_of(const std::string& flag, int tp) {
    try {
        resolve_device(flag, tp, nullptr);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--device"), std::string::npos) << e.what();
        return e.exit_status();
    }
    return 0;
}

TEST(DeviceFlag, AutoCpuCudaAndBadValues) {
    std::string note = "stale";
    EXPECT_EQ(resolve_device("cpu", 1, &note), Device::Cpu);
    EXPECT_TRUE(note.empty());
    EXPECT_EQ(exit_status_of("tpu", 1), 2);
    EXPECT_EQ(exit_status_of("CUDA", 1), 2);
    EXPECT_EQ(exit_status_of("", 1), 2);
    if (cuda_device_count() == 0) {
        EXPECT_EQ(resolve_device("auto", 1, &note), Device::Cpu);
        EXPECT_TRUE(note.empty()) << note;  // no GPU: nothing to say
        EXPECT_EQ(resolve_device("auto", 4, &note), Device::Cpu);
        EXPECT_EQ(exit_status_of("cuda", 1), 2);
    } else {  // the GPU side in full: tests/gpu/device_flag_test.cpp
        EXPECT_EQ(resolve_device("auto", 1, &note), Device::Cuda);
    }
}

// --devices (or MYRIAD_CUDA_DEVICES): one GPU per rank, repeats allowed; anything else names it.
TEST(DeviceFlag, DevicesListOnePerRank) {
    unsetenv("MYRIAD_CUDA_DEVICES");
    EXPECT_EQ(parse_devices("", 3), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(parse_devices("0,0,0,0", 4), (std::vector<int>{0, 0, 0, 0}));
    EXPECT_EQ(parse_devices("3,1", 2), (std::vector<int>{3, 1}));
    setenv("MYRIAD_CUDA_DEVICES", "1,1", 1);
    EXPECT_EQ(parse_devices("", 2), (std::vector<int>{1, 1}));
    EXPECT_EQ(parse_devices("0,1", 2), (std::vector<int>{0, 1}));  // the flag wins
    unsetenv("MYRIAD_CUDA_DEVICES");
    for (const char* bad : {"0,", "a,b", "0,-1", ",0", "0;1"}) {
        try {
            parse_devices(bad, 2);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.exit_status(), 2);
            EXPECT_NE(std::string(e.what()).find("--devices"), std::string::npos) << e.what();
        }
    }
    try {
        parse_devices("0,0,0", 4);
        ADD_FAILURE() << "3 GPUs for 4 ranks accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("names 3 GPU(s) for --tp 4"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace myriad::testing
