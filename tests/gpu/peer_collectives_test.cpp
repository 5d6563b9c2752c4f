// The collectives of ranks on one GPU as kernels (peer_collectives.h through DeviceCommunicator):
// one-shot and two-shot all-reduce at every size from 16 B to 8 MB and 2, 4 and 8 ranks, with
// BF16 and F32 on the wire, against a sum on the CPU that rounds each rank's input as the wire
// does and adds in rank order — equal to the bit, on every rank, outputs poisoned first; the same
// recorded in a CUDA graph and replayed 1,000 times; the vocabulary gather; and a rank that never
// arrives, which must fail the other's step within the bound, naming both.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "ops/backend.h"
#include "parallel/cuda/device_communicator.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

using cuda::DeviceCommGroup;
using cuda::DeviceCommunicator;
using cuda::PeerAlgo;

void ok(cudaError_t e) {
    ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
}

float round_bf16(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &b, 4);
    return f;
}

std::vector<float> rank_input(int rank, int64_t n) {
    std::mt19937 rng(static_cast<uint32_t>(1000 * rank + n));
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<float> cpu_sum(int world, int64_t n, bool bf16) {
    std::vector<float> s(static_cast<size_t>(n), 0.0f);
    for (int r = 0; r < world; ++r) {
        const std::vector<float> in = rank_input(r, n);
        for (int64_t i = 0; i < n; ++i) s[i] += bf16 ? round_bf16(in[i]) : in[i];
    }
    return s;
}

// `world` ranks on GPU 0, each a thread with its own stream and communicator, running `body`.
void run_ranks(int world, bool bf16,
               const std::function<void(int, DeviceCommunicator&, cudaStream_t)>& body) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    auto group = std::make_shared<DeviceCommGroup>(std::vector<int>(static_cast<size_t>(world), 0));
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
            try {
                cudaSetDevice(0);
                cudaStream_t s;
                cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                {
                    DeviceCommunicator comm(group, r, s, bf16);
                    if (!comm.graph_safe())
                        throw std::runtime_error("no peer kernels: " + group->choice().why_not);
                    body(r, comm, s);
                }
                cudaStreamDestroy(s);
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(r)] = e.what();
                group->barrier().abort(e.what());
            }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < world; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

struct DeviceVec {
    float* p = nullptr;
    explicit DeviceVec(int64_t n) {
        cudaMalloc(reinterpret_cast<void**>(&p), sizeof(float) * std::max<int64_t>(n, 1));
    }
    ~DeviceVec() { cudaFree(p); }
};

// The stream is waited for first: a copy to pageable memory that waits for its stream holds up
// the other ranks' CUDA calls, while this stream's collective may wait for one of them.
std::vector<float> fetch(const float* p, int64_t n, cudaStream_t s) {
    std::vector<float> v(static_cast<size_t>(n));
    cudaStreamSynchronize(s);
    cudaMemcpyAsync(v.data(), p, sizeof(float) * n, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    return v;
}

// The first element that differs in its bits, or -1.
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], 4) != 0) return static_cast<int64_t>(i);
    return -1;
}

// Floats: 16 B, 20 B (not a whole vector), 1 KiB, 14 KiB (a Kimi decode row), an odd 64 KiB,
// 256 KiB, 1 MiB, 8 MiB (several rounds with F32 on the wire).
constexpr int64_t kSizes[] = {4, 5, 256, 3584, 16387, 65536, 262144, 2097152};

class PeerAllReduce : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Ranks share the GPU: nothing that waits for the whole GPU (cudaMalloc, cudaFree) may run
// between collectives, where another rank's kernel may be waiting for this one's. Buffers are
// allocated before the first and freed after the last (after a meeting on the host).
constexpr int64_t kMaxFloats = 2097152;

TEST_P(PeerAllReduce, EqualsTheCpuSumToTheBitOnEveryRank) {
    const auto [world, bf16] = GetParam();
    run_ranks(world, bf16, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
        DeviceVec din(kMaxFloats), dout(kMaxFloats);
        comm.barrier();
        for (int64_t n : kSizes) {
            const std::vector<float> want = cpu_sum(world, n, bf16);
            const std::vector<float> in = rank_input(rank, n);
            for (PeerAlgo algo : {PeerAlgo::OneShot, PeerAlgo::TwoShot}) {
                cudaMemcpyAsync(din.p, in.data(), sizeof(float) * n, cudaMemcpyHostToDevice, s);
                cudaMemsetAsync(dout.p, 0xff, sizeof(float) * n, s);  // NaN where unwritten
                comm.all_reduce_with(algo, din.p, dout.p, n);
                const std::vector<float> got = fetch(dout.p, n, s);
                comm.check_step();
                const int64_t bad = first_difference(got, want);
                EXPECT_EQ(bad, -1)
                    << "rank " << rank << " of " << world << ", " << n << " floats, "
                    << (algo == PeerAlgo::OneShot ? "one" : "two") << "-shot: element " << bad
                    << " is " << (bad >= 0 ? got[bad] : 0) << ", the CPU's "
                    << (bad >= 0 ? want[bad] : 0);
            }
            // In place, as the forward pass calls it (the chosen algorithm).
            cudaMemcpyAsync(din.p, in.data(), sizeof(float) * n, cudaMemcpyHostToDevice, s);
            comm.all_reduce_sum(Tensor(din.p, DType::F32, {n}, Device::Cuda));
            const std::vector<float> got = fetch(din.p, n, s);
            // Op by op, ranks sharing a GPU sum through the host in F32.
            if (!bf16)
                EXPECT_EQ(first_difference(got, want), -1)
                    << "in place, rank " << rank << ", " << n << " floats";
            else
                EXPECT_EQ(first_difference(got, cpu_sum(world, n, false)), -1)
                    << "in place (through the host), rank " << rank << ", " << n << " floats";
        }
        comm.barrier();
    });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PeerAllReduce,
                         ::testing::Combine(::testing::Values(2, 4, 8), ::testing::Bool()),
                         [](const auto& info) {
                             return "world" + std::to_string(std::get<0>(info.param)) +
                                    (std::get<1>(info.param) ? "_bf16" : "_f32");
                         });

class PeerGraphReplay : public ::testing::TestWithParam<int> {};

TEST_P(PeerGraphReplay, AThousandReplaysGiveTheSameBits) {
    const int world = GetParam();
    run_ranks(world, true, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
        struct Case {
            int64_t n;
            PeerAlgo algo;
            std::unique_ptr<DeviceVec> in, out;
            cudaGraphExec_t exec = nullptr;
        };
        std::vector<Case> cases;
        for (int64_t n : {int64_t{3584}, int64_t{262144}})
            for (PeerAlgo algo : {PeerAlgo::OneShot, PeerAlgo::TwoShot}) {
                Case c{n, algo, std::make_unique<DeviceVec>(n), std::make_unique<DeviceVec>(n)};
                const std::vector<float> in = rank_input(rank, n);
                cudaMemcpyAsync(c.in->p, in.data(), sizeof(float) * n, cudaMemcpyHostToDevice, s);
                cudaStreamSynchronize(s);
                cudaGraph_t graph;
                ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
                cudaMemsetAsync(c.out->p, 0xff, sizeof(float) * n, s);  // poisoned every replay
                comm.all_reduce_with(algo, c.in->p, c.out->p, n);
                ok(cudaStreamEndCapture(s, &graph));
                ok(cudaGraphInstantiate(&c.exec, graph, 0));
                cudaGraphDestroy(graph);
                cases.push_back(std::move(c));
            }
        comm.barrier();  // every rank's graphs exist before any replays
        for (Case& c : cases) {
            const std::vector<float> want = cpu_sum(world, c.n, true);
            int wrong = 0;
            for (int i = 1; i <= 1000; ++i) {
                ok(cudaGraphLaunch(c.exec, s));
                if (i % 100 == 0 && first_difference(fetch(c.out->p, c.n, s), want) != -1) ++wrong;
            }
            comm.check_step();
            EXPECT_EQ(wrong, 0) << "rank " << rank << ", " << c.n << " floats, "
                                << (c.algo == PeerAlgo::OneShot ? "one" : "two")
                                << "-shot: " << wrong
                                << " of 10 checked replays differ from the CPU's sum";
        }
        cudaStreamSynchronize(s);
        comm.barrier();  // no rank frees while another still replays
        for (Case& c : cases) cudaGraphExecDestroy(c.exec);
    });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PeerGraphReplay, ::testing::Values(2, 4, 8));

TEST(PeerGatherColumns, PlacesEachRanksSliceInItsColumns) {
    const int world = 4;
    run_ranks(world, true, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
        DeviceVec din(600 * 4099), dout(600 * 4099 * world);
        comm.barrier();
        // A decode step's logits slice, and a prefill's that takes several rounds (in a graph:
        // ranks sharing a GPU gather through the host op by op).
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 20480}, {600, 4099}}) {
            const std::vector<float> in = rank_input(rank, rows * cols);
            cudaMemcpyAsync(din.p, in.data(), sizeof(float) * rows * cols, cudaMemcpyHostToDevice,
                            s);
            cudaMemsetAsync(dout.p, 0xff, sizeof(float) * rows * cols * world, s);
            cudaStreamSynchronize(s);
            cudaGraph_t graph;
            ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
            comm.all_gather_columns(Tensor(din.p, DType::F32, {rows, cols}, Device::Cuda),
                                    Tensor(dout.p, DType::F32, {rows, cols * world}, Device::Cuda));
            ok(cudaStreamEndCapture(s, &graph));
            cudaGraphExec_t exec;
            ok(cudaGraphInstantiate(&exec, graph, 0));
            cudaGraphDestroy(graph);
            ok(cudaGraphLaunch(exec, s));
            const std::vector<float> got = fetch(dout.p, rows * cols * world, s);
            comm.check_step();
            int64_t bad = 0;
            for (int r = 0; r < world; ++r) {
                const std::vector<float> part = rank_input(r, rows * cols);
                for (int64_t i = 0; i < rows; ++i)
                    bad += std::memcmp(&got[(i * world + r) * cols], &part[i * cols],
                                       sizeof(float) * cols) != 0;
            }
            EXPECT_EQ(bad, 0) << "rank " << rank << ": rows of " << rows << " x " << cols
                              << " placed wrongly";
            comm.barrier();
            cudaGraphExecDestroy(exec);
        }
        comm.barrier();
    });
}

TEST(PeerWaitBound, ARankThatNeverArrivesFailsTheOthersStepNamingIt) {
    setenv("MYRIAD_COLLECTIVE_TIMEOUT", "1", 1);
    std::string error;
    double waited = 0;
    run_ranks(2, true, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
        if (rank == 1) return;  // never calls the collective
        DeviceVec d(1024);
        cudaMemsetAsync(d.p, 0, sizeof(float) * 1024, s);
        const auto start = std::chrono::steady_clock::now();
        comm.all_reduce_with(PeerAlgo::OneShot, d.p, d.p, 1024);
        cudaStreamSynchronize(s);
        waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        try {
            comm.check_step();
        } catch (const Error& e) {
            error = e.what();
        }
    });
    unsetenv("MYRIAD_COLLECTIVE_TIMEOUT");
    std::printf("the stuck collective gave up after %.2f s: %s\n", waited, error.c_str());
    EXPECT_NE(error.find("rank 0"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1's flag"), std::string::npos) << error;
    EXPECT_LT(waited, 30.0);
}

}  // namespace
}  // namespace myriad::testing
