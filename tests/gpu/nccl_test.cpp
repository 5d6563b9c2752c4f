// NCCL at world 1 on GPU 0 (parallel/cuda/nccl_communicator.h): the collectives recorded in a CUDA
// graph and replayed 100 times, each replay's outputs poisoned first and checked after; NVLink
// multicast off in the environment after the group is made unless the user set it; the refusals
// that need no NCCL. Skipped, saying why, only where NCCL cannot be loaded.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "parallel/cuda/cuda_topology.h"
#include "parallel/cuda/nccl_communicator.h"
#include "parallel/nccl_library.h"
#include "parallel/topology.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
// The ABI subset parallel/nccl_library.h declares matches the installed header.
static_assert(sizeof(myriad::nccl::UniqueId) == sizeof(ncclUniqueId));
static_assert(myriad::nccl::kSuccess == ncclSuccess);
static_assert(static_cast<int>(myriad::nccl::DataType::Uint8) == ncclUint8);
static_assert(static_cast<int>(myriad::nccl::DataType::Float32) == ncclFloat32);
static_assert(static_cast<int>(myriad::nccl::DataType::Bfloat16) == ncclBfloat16);
static_assert(static_cast<int>(myriad::nccl::RedOp::Sum) == ncclSum);
static_assert(sizeof(ncclComm_t) == sizeof(myriad::nccl::Comm));
#endif

namespace myriad::cuda {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

class GpuNccl : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        if (!nccl::library(&why)) GTEST_SKIP() << "NCCL cannot be loaded: " << why;
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
};

// An environment variable, restored when the test ends.
struct SavedEnv {
    explicit SavedEnv(const char* n) : name(n) {
        const char* v = std::getenv(n);
        had = v != nullptr;
        if (had) value = v;
    }
    ~SavedEnv() {
        if (had)
            setenv(name, value.c_str(), 1);
        else
            unsetenv(name);
    }
    const char* name;
    bool had;
    std::string value;
};

TEST_F(GpuNccl, MulticastIsOffAfterInitUnlessTheUserSetIt) {
    SavedEnv saved("NCCL_NVLS_ENABLE");
    unsetenv("NCCL_NVLS_ENABLE");
    std::string why;
    {
        auto group = make_nccl_comm_group({0}, &why);
        ASSERT_NE(group, nullptr) << why;
        const char* v = std::getenv("NCCL_NVLS_ENABLE");
        ASSERT_NE(v, nullptr);
        EXPECT_STREQ(v, "0");
    }
    setenv("NCCL_NVLS_ENABLE", "1", 1);  // the user's: kept
    auto group = make_nccl_comm_group({0}, &why);
    ASSERT_NE(group, nullptr) << why;
    EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "1");
}

TEST(GpuNcclRefusal, TwoRanksOnOneGpuAndMissingGpus) {
    std::string why;
    EXPECT_EQ(make_nccl_comm_group({0, 0}, &why), nullptr);
    EXPECT_NE(why.find("one rank per GPU"), std::string::npos) << why;
    EXPECT_NE(why.find("GPU 0 holds ranks 0 and 1"), std::string::npos) << why;
    int n = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    EXPECT_EQ(make_nccl_comm_group({n}, &why), nullptr);
    EXPECT_NE(why.find("GPU " + std::to_string(n) + " requested"), std::string::npos) << why;
}

TEST(GpuTopology, CudaDevicesAreMatchedToNvml) {
    int n = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    const Topology t = probe_cuda_topology();
    ASSERT_EQ(t.size(), n);
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(t.gpus[i].index, i);
        EXPECT_EQ(sysfs_pci_address(t.gpus[i].bus_id), t.gpus[i].bus_id);
        EXPECT_FALSE(t.gpus[i].bus_id.empty());
        EXPECT_EQ(t.link(i, i), GpuLink::Same);
    }
    for (const std::string& line : topology_lines(t)) std::printf("%s\n", line.c_str());
}

// all_reduce_sum (in place), all_gather into a second buffer and broadcast from rank 0, recorded
// in one graph after a copy of the input; every replay starts from poisoned buffers.
TEST_F(GpuNccl, WorldOneCollectivesInACapturedGraph) {
    std::string why;
    auto group = make_nccl_comm_group({0}, &why);
    ASSERT_NE(group, nullptr) << why;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
        NcclCommunicator comm(group, 0, stream);
        EXPECT_EQ(comm.world(), 1);
        constexpr int64_t n = 3000;
        std::vector<float> src(n);
        for (int64_t i = 0; i < n; ++i) src[i] = 0.25f * static_cast<float>(i) - 100.0f;
        float *in = nullptr, *x = nullptr, *gathered = nullptr;
        CUDA_OK(cudaMalloc(&in, n * sizeof(float)));
        CUDA_OK(cudaMalloc(&x, n * sizeof(float)));
        CUDA_OK(cudaMalloc(&gathered, n * sizeof(float)));
        CUDA_OK(cudaMemcpy(in, src.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        const Tensor tx(x, DType::F32, {n}, Device::Cuda);
        const Tensor tg(gathered, DType::F32, {1, n}, Device::Cuda);

        cudaGraph_t graph;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        cudaMemcpyAsync(x, in, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
        comm.all_reduce_sum(tx);
        comm.all_gather(tx, tg);
        comm.broadcast(gathered, n * sizeof(float), 0);
        CUDA_OK(cudaStreamEndCapture(stream, &graph));
        cudaGraphExec_t exec;
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

        std::vector<float> got_x(n), got_g(n);
        for (int replay = 0; replay < 100; ++replay) {
            CUDA_OK(cudaMemsetAsync(x, 0xff, n * sizeof(float), stream));  // NaN
            CUDA_OK(cudaMemsetAsync(gathered, 0xff, n * sizeof(float), stream));
            CUDA_OK(cudaGraphLaunch(exec, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            CUDA_OK(cudaMemcpy(got_x.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(got_g.data(), gathered, n * sizeof(float), cudaMemcpyDeviceToHost));
            ASSERT_EQ(std::memcmp(got_x.data(), src.data(), n * sizeof(float)), 0)
                << "all_reduce_sum, replay " << replay;
            ASSERT_EQ(std::memcmp(got_g.data(), src.data(), n * sizeof(float)), 0)
                << "all_gather + broadcast, replay " << replay;
        }
        // Graphs before the communicators (nccl_communicator.h).
        CUDA_OK(cudaGraphExecDestroy(exec));
        CUDA_OK(cudaGraphDestroy(graph));
        cudaFree(in);
        cudaFree(x);
        cudaFree(gathered);
    }
    group.reset();  // synchronises GPU 0, destroys the NCCL communicator
    CUDA_OK(cudaStreamDestroy(stream));
}

// Outside a graph the calls return before the work is done (no host synchronisation) and the
// result is there in stream order.
TEST_F(GpuNccl, WorldOneEagerInStreamOrder) {
    std::string why;
    auto group = make_nccl_comm_group({0}, &why);
    ASSERT_NE(group, nullptr) << why;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
        NcclCommunicator comm(group, 0, stream);
        constexpr int64_t n = 1 << 16;
        std::vector<float> src(n, 3.5f), got(n, 0.0f);
        float *x = nullptr, *y = nullptr;
        CUDA_OK(cudaMalloc(&x, n * sizeof(float)));
        CUDA_OK(cudaMalloc(&y, n * sizeof(float)));
        CUDA_OK(cudaMemcpyAsync(x, src.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
        comm.all_reduce_sum(Tensor(x, DType::F32, {n}, Device::Cuda));
        comm.all_gather(Tensor(x, DType::F32, {n}, Device::Cuda),
                        Tensor(y, DType::F32, {1, n}, Device::Cuda));
        CUDA_OK(cudaMemcpyAsync(got.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.5f) << i;
        cudaFree(x);
        cudaFree(y);
    }
    group.reset();
    CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace myriad::cuda
