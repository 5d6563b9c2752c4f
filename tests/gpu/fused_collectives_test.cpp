// The all-reduce fused with the residual add and the norm (peer_all_reduce_add_rmsnorm through
// DeviceCommunicator), ranks on one GPU: at hidden 2048 and 7168, 1 to 64 rows, 2, 4 and 8 ranks,
// recorded in a CUDA graph and replayed 1,000 times with h reset and x poisoned in every replay:
// the residual equal to the bit to a CPU sum in rank order (each rank's values rounded as the wire
// rounds them), the norm within float rounding of a norm in double, the same bits on every rank,
// and the same bits as the unfused path (one-shot all-reduce, then the ops' add_rmsnorm). Also:
// which calls the communicator fuses (the one-shot tier), a small variant for compute-sanitizer
// (GpuFusedCollectivesSmall.*), and the three-tier choice with NCCL above two-shot.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops/backend.h"
#include "ops/cuda/kernels.h"
#include "parallel/cuda/device_communicator.h"
#include "parallel/nccl_library.h"

namespace myriad::testing {
namespace {

using cuda::DeviceCommGroup;
using cuda::DeviceCommunicator;
using cuda::PeerAlgo;

constexpr float kEps = 1e-6f;

float round_bf16(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &b, 4);
    return f;
}

uint16_t bf16_bits(float f) {
    const float r = round_bf16(f);
    uint32_t b;
    std::memcpy(&b, &r, 4);
    return static_cast<uint16_t>(b >> 16);
}

std::vector<float> values(uint32_t seed, int64_t n, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
}

// Rank r's sub-layer output, the shared residual and the norm's weights of a case.
std::vector<float> rank_y(int rank, int64_t rows, int64_t d) {
    return values(static_cast<uint32_t>(1000 * rank + rows * 7 + d), rows * d, 2.0f);
}
std::vector<float> residual(int64_t rows, int64_t d) {
    return values(static_cast<uint32_t>(5 + rows + d), rows * d, 1.0f);
}
std::vector<float> gamma(int64_t d) {
    std::vector<float> g = values(static_cast<uint32_t>(9 + d), d, 0.5f);
    for (float& x : g) x = round_bf16(x);  // exact in BF16 and F32 alike
    return g;
}

// The CPU's h: the residual plus the sum in rank order (F32, as the kernels add); its x in double.
struct Reference {
    std::vector<float> h;
    std::vector<double> x;
};
Reference reference(int world, int64_t rows, int64_t d, bool bf16_wire) {
    Reference ref;
    std::vector<float> sum(static_cast<size_t>(rows * d), 0.0f);
    for (int r = 0; r < world; ++r) {
        const std::vector<float> y = rank_y(r, rows, d);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += bf16_wire ? round_bf16(y[i]) : y[i];
    }
    ref.h = residual(rows, d);
    for (size_t i = 0; i < sum.size(); ++i) ref.h[i] += sum[i];
    const std::vector<float> g = gamma(d);
    ref.x.resize(ref.h.size());
    for (int64_t t = 0; t < rows; ++t) {
        double ss = 0;
        for (int64_t i = 0; i < d; ++i) ss += double(ref.h[t * d + i]) * ref.h[t * d + i];
        const double inv = 1.0 / std::sqrt(ss / double(d) + kEps);
        for (int64_t i = 0; i < d; ++i) ref.x[t * d + i] = g[i] * (ref.h[t * d + i] * inv);
    }
    return ref;
}

void run_ranks(const std::vector<int>& devices, bool bf16,
               const std::function<void(int, DeviceCommunicator&, cudaStream_t)>& body) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    auto group = std::make_shared<DeviceCommGroup>(devices);
    const int world = static_cast<int>(devices.size());
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
            try {
                cudaSetDevice(devices[static_cast<size_t>(r)]);
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

std::vector<int> one_gpu(int world) {
    return std::vector<int>(static_cast<size_t>(world), 0);
}

template <class T>
struct DeviceBuf {
    T* p = nullptr;
    explicit DeviceBuf(int64_t n) {
        cudaMalloc(reinterpret_cast<void**>(&p), sizeof(T) * std::max<int64_t>(n, 1));
    }
    ~DeviceBuf() { cudaFree(p); }
    DeviceBuf(const DeviceBuf&) = delete;
    DeviceBuf& operator=(const DeviceBuf&) = delete;
};

// The stream is waited for first: a copy that waits for its stream holds up the other ranks'
// CUDA calls, while this stream's collective may wait for one of them.
std::vector<float> fetch(const float* p, int64_t n, cudaStream_t s) {
    std::vector<float> v(static_cast<size_t>(n));
    cudaStreamSynchronize(s);
    cudaMemcpyAsync(v.data(), p, sizeof(float) * n, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    return v;
}

int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], 4) != 0) return static_cast<int64_t>(i);
    return -1;
}

// The worst |x - want| over the rows, relative to max(1, |want|).
double worst_norm_error(const std::vector<float>& x, const std::vector<double>& want) {
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double e = std::abs(double(x[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
        worst = std::max(worst, std::isnan(e) ? 1e30 : e);
    }
    return worst;
}

// One case's buffers on a rank: y, the residual's start, h and x (fused), h and x (unfused).
struct Case {
    int64_t rows = 0, d = 0;
    bool w_bf16 = false;
    PeerAlgo algo = PeerAlgo::OneShot;
    std::unique_ptr<DeviceBuf<float>> y, y_sum, h0, h, x, h_ref, x_ref, w;
    cudaGraphExec_t exec = nullptr;
};

Case make_case(int rank, int64_t rows, int64_t d, bool w_bf16, PeerAlgo algo, cudaStream_t s) {
    const int64_t n = rows * d;
    Case c;
    c.rows = rows;
    c.d = d;
    c.w_bf16 = w_bf16;
    c.algo = algo;
    for (auto* b : {&c.y, &c.y_sum, &c.h0, &c.h, &c.x, &c.h_ref, &c.x_ref})
        *b = std::make_unique<DeviceBuf<float>>(n);
    c.w = std::make_unique<DeviceBuf<float>>(d);
    const std::vector<float> y = rank_y(rank, rows, d), h0 = residual(rows, d), g = gamma(d);
    cudaMemcpyAsync(c.y->p, y.data(), sizeof(float) * n, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(c.h0->p, h0.data(), sizeof(float) * n, cudaMemcpyHostToDevice, s);
    if (w_bf16) {
        std::vector<uint16_t> wb(g.size());
        for (size_t i = 0; i < g.size(); ++i) wb[i] = bf16_bits(g[i]);
        cudaMemcpyAsync(c.w->p, wb.data(), sizeof(uint16_t) * d, cudaMemcpyHostToDevice, s);
    } else {
        cudaMemcpyAsync(c.w->p, g.data(), sizeof(float) * d, cudaMemcpyHostToDevice, s);
    }
    cudaStreamSynchronize(s);
    return c;
}

// Records: h = h0, x poisoned (NaN), the fused collective; then the unfused path with the same
// algorithm into h_ref and x_ref (the all-reduce into y_sum, then add_rmsnorm).
void record(Case& c, const cuda::PeerView& view, bool bf16_wire, cudaStream_t s) {
    const int64_t n = c.rows * c.d;
    const size_t bytes = sizeof(float) * n;
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    cudaMemcpyAsync(c.h->p, c.h0->p, bytes, cudaMemcpyDeviceToDevice, s);
    cudaMemsetAsync(c.x->p, 0xff, bytes, s);
    cuda::peer_all_reduce_add_rmsnorm(view, c.algo, c.y->p, c.h->p, c.w->p, c.w_bf16, c.rows, c.d,
                                      kEps, c.x->p, bf16_wire, s);
    cudaMemcpyAsync(c.h_ref->p, c.h0->p, bytes, cudaMemcpyDeviceToDevice, s);
    cudaMemsetAsync(c.x_ref->p, 0xff, bytes, s);
    cudaMemsetAsync(c.y_sum->p, 0xff, bytes, s);
    cuda::peer_all_reduce(view, c.algo, c.y->p, c.y_sum->p, n, bf16_wire, s);
    cuda::add_rmsnorm(c.h_ref->p, c.y_sum->p, c.w->p, c.w_bf16, c.rows, c.d, kEps, c.x_ref->p, s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&c.exec, graph, 0), cudaSuccess);
    cudaGraphDestroy(graph);
}

// Each rank's results of a case, for the comparison across ranks.
struct Shared {
    std::vector<std::vector<float>> h, x;
};

// Each shape with one-shot and with two-shot, a BF16 norm weight every other case.
void check_cases(int world, const std::vector<std::pair<int64_t, int64_t>>& shape_list, int replays,
                 int check_every) {
    const bool bf16_wire = true;
    struct Shape {
        int64_t rows, d;
        PeerAlgo algo;
    };
    std::vector<Shape> shapes;
    for (auto [rows, d] : shape_list)
        for (PeerAlgo algo : {PeerAlgo::OneShot, PeerAlgo::TwoShot})
            shapes.push_back({rows, d, algo});
    std::vector<Shared> shared(shapes.size());
    for (Shared& sh : shared) sh.h.resize(world), sh.x.resize(world);
    run_ranks(one_gpu(world), bf16_wire, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
        std::vector<Case> cases;
        for (size_t k = 0; k < shapes.size(); ++k) {
            cases.push_back(
                make_case(rank, shapes[k].rows, shapes[k].d, (k / 2) % 2 == 1, shapes[k].algo, s));
            record(cases.back(), comm.view(), bf16_wire, s);
        }
        comm.barrier();  // every rank's graphs exist before any replays
        for (size_t k = 0; k < cases.size(); ++k) {
            Case& c = cases[k];
            const int64_t n = c.rows * c.d;
            const Reference ref = reference(world, c.rows, c.d, bf16_wire);
            const std::string what = "rank " + std::to_string(rank) + " of " +
                                     std::to_string(world) + ", " + std::to_string(c.rows) + " x " +
                                     std::to_string(c.d) +
                                     (c.w_bf16 ? " (BF16 norm, " : " (F32 norm, ") +
                                     (c.algo == PeerAlgo::OneShot ? "one-shot)" : "two-shot)");
            int wrong_h = 0, wrong_x = 0, unlike_unfused = 0;
            double worst = 0;
            std::vector<float> h, x;
            for (int i = 1; i <= replays; ++i) {
                ASSERT_EQ(cudaGraphLaunch(c.exec, s), cudaSuccess);
                if (i % check_every != 0) continue;
                h = fetch(c.h->p, n, s);
                x = fetch(c.x->p, n, s);
                wrong_h += first_difference(h, ref.h) != -1;
                const double e = worst_norm_error(x, ref.x);
                worst = std::max(worst, e);
                wrong_x += e > 1e-5;
                unlike_unfused += first_difference(h, fetch(c.h_ref->p, n, s)) != -1 ||
                                  first_difference(x, fetch(c.x_ref->p, n, s)) != -1;
            }
            comm.check_step();
            const int checks = replays / check_every;
            EXPECT_EQ(wrong_h, 0) << what << ": " << wrong_h << " of " << checks
                                  << " checked replays' residual differ from the CPU's sum";
            EXPECT_EQ(wrong_x, 0) << what << ": the norm is off by up to " << worst
                                  << " (relative) from the norm in double";
            EXPECT_EQ(unlike_unfused, 0)
                << what << ": " << unlike_unfused << " of " << checks
                << " checked replays differ from all-reduce then add_rmsnorm in their bits";
            shared[k].h[static_cast<size_t>(rank)] = h;
            shared[k].x[static_cast<size_t>(rank)] = x;
        }
        cudaStreamSynchronize(s);
        comm.barrier();  // no rank frees while another still replays
        for (Case& c : cases) cudaGraphExecDestroy(c.exec);
    });
    for (size_t k = 0; k < shapes.size(); ++k)
        for (int r = 1; r < world; ++r) {
            EXPECT_EQ(first_difference(shared[k].h[r], shared[k].h[0]), -1)
                << shapes[k].rows << " x " << shapes[k].d << ": rank " << r
                << "'s residual is not rank 0's";
            EXPECT_EQ(first_difference(shared[k].x[r], shared[k].x[0]), -1)
                << shapes[k].rows << " x " << shapes[k].d << ": rank " << r
                << "'s norm is not rank 0's";
        }
}

class GpuFusedCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GpuFusedCollectives, AThousandReplaysMatchTheCpuAndTheUnfusedPathOnEveryRank) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (int64_t d : {int64_t{2048}, int64_t{7168}})
        for (int64_t rows : {1, 2, 3, 8, 17, 32, 64}) shapes.emplace_back(rows, d);
    check_cases(GetParam(), shapes, 1000, 100);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuFusedCollectives, ::testing::Values(2, 4, 8));

// Few sizes and replays: the variant compute-sanitizer runs (GPU_SANITIZER_FILTER).
TEST(GpuFusedCollectivesSmall, TwoRanksFewSizes) {
    check_cases(2, {{1, 2048}, {3, 7168}, {2, 64}}, 4, 2);
}

// One rank's view made by hand (no other rank to wait for, so it runs under compute-sanitizer
// even where the tool serialises kernels): every buffer the kernel touches, at sizes that leave
// no slack around the rows, against the CPU and the unfused path.
TEST(GpuFusedCollectivesSmall, OneRankViewMatchesTheCpuAndTheUnfusedPath) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cuda::PeerView v;
    v.world = 1;
    v.rank = 0;
    v.data_bytes = size_t{1} << 20;
    v.sum_floats = size_t{1} << 18;
    DeviceBuf<uint8_t> data(static_cast<int64_t>(2 * v.data_bytes));
    DeviceBuf<float> sums(static_cast<int64_t>(2 * v.sum_floats));
    DeviceBuf<uint32_t> flags(cuda::kPeerPhases * cuda::kPeerBlocks), epoch(cuda::kPeerBlocks);
    cudaMemset(flags.p, 0, sizeof(uint32_t) * cuda::kPeerPhases * cuda::kPeerBlocks);
    cudaMemset(epoch.p, 0, sizeof(uint32_t) * cuda::kPeerBlocks);
    cuda::PeerFailure* failure = nullptr;
    ASSERT_EQ(
        cudaHostAlloc(reinterpret_cast<void**>(&failure), sizeof(*failure), cudaHostAllocMapped),
        cudaSuccess);
    std::memset(failure, 0, sizeof(*failure));
    ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&v.failure), failure, 0),
              cudaSuccess);
    v.data[0] = data.p;
    v.sums[0] = sums.p;
    v.flags[0] = flags.p;
    v.epoch = epoch.p;
    v.timeout_ns = uint64_t{10} * 1000000000;
    for (auto [rows, d] : {std::pair<int64_t, int64_t>{1, 2048}, {3, 7168}, {5, 64}}) {
        for (bool w_bf16 : {false, true}) {
            Case c = make_case(0, rows, d, w_bf16, PeerAlgo::OneShot, s);
            record(c, v, true, s);
            for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(c.exec, s), cudaSuccess);
            const int64_t n = rows * d;
            const std::vector<float> h = fetch(c.h->p, n, s), x = fetch(c.x->p, n, s);
            const Reference ref = reference(1, rows, d, true);
            const std::string what = std::to_string(rows) + " x " + std::to_string(d);
            EXPECT_EQ(first_difference(h, ref.h), -1) << what << ": the residual";
            EXPECT_LT(worst_norm_error(x, ref.x), 1e-5) << what << ": the norm";
            EXPECT_EQ(first_difference(h, fetch(c.h_ref->p, n, s)), -1) << what << " vs unfused";
            EXPECT_EQ(first_difference(x, fetch(c.x_ref->p, n, s)), -1) << what << " vs unfused";
            cudaGraphExecDestroy(c.exec);
        }
    }
    EXPECT_EQ(failure->failed, 0u);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    cudaFreeHost(failure);
    cudaStreamDestroy(s);
}

// The communicator fuses the one-shot and two-shot tiers (MYRIAD_ALLREDUCE fixes the crossover)
// where the kernel takes the message, and leaves the rest to the unfused path: rows not of whole
// vectors of 8, and (two-shot, whose h and x go through the sums buffer) 160 rows of 7168.
TEST(GpuFusedCollectivesRouting, FusesWhatTheKernelTakes) {
    for (const char* forced : {"oneshot", "twoshot"}) {
        setenv("MYRIAD_ALLREDUCE", forced, 1);
        const bool one = std::string(forced) == "oneshot";
        run_ranks(one_gpu(2), true, [&](int rank, DeviceCommunicator& comm, cudaStream_t s) {
            const int64_t big = 160 * 7168;
            DeviceBuf<float> y(big), h(big), x(big), w(7168);
            comm.barrier();
            auto t = [](float* p, int64_t rows, int64_t d) {
                return Tensor(p, DType::F32, {rows, d}, Device::Cuda);
            };
            auto fuse = [&](int64_t rows, int64_t d) {
                return comm.all_reduce_add_rmsnorm(t(y.p, rows, d), t(h.p, rows, d),
                                                   Tensor(w.p, DType::F32, {d}, Device::Cuda), kEps,
                                                   t(x.p, rows, d));
            };
            cudaGraph_t graph;
            ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
            const bool small = fuse(4, 2048), odd = fuse(4, 2044), large = fuse(160, 7168);
            ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
            cudaGraphDestroy(graph);  // recorded, never run
            EXPECT_TRUE(small) << forced << ", rank " << rank;
            EXPECT_FALSE(odd) << forced << ", rank " << rank;
            EXPECT_EQ(large, one) << forced << ", rank " << rank;
            // Op by op, ranks sharing a GPU meet on the host: nothing is fused.
            EXPECT_FALSE(fuse(4, 2048)) << forced << ", rank " << rank;
            comm.barrier();
        });
        unsetenv("MYRIAD_ALLREDUCE");
    }
}

// Ranks sharing a GPU: NCCL cannot hold them, so two-shot is the largest tier and the line that
// reports the measurement says why.
TEST(GpuAllReduceTiers, RanksSharingAGpuHaveNoNcclTierAndSayWhy) {
    std::string line;
    {
        auto g = cuda::make_device_comm_group(one_gpu(2));
        std::vector<std::thread> threads;
        std::vector<std::string> errors(2);
        for (int r = 0; r < 2; ++r)
            threads.emplace_back([&, r] {
                try {
                    cudaSetDevice(0);
                    cudaStream_t s;
                    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                    { DeviceCommunicator comm(g, r, s, true); }
                    cudaStreamDestroy(s);
                } catch (const std::exception& e) {
                    errors[static_cast<size_t>(r)] = e.what();
                    g->barrier().abort(e.what());
                }
            });
        for (auto& t : threads) t.join();
        for (int r = 0; r < 2; ++r) ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
        line = g->measured_all_reduce();
        EXPECT_EQ(g->choice().nccl_from, SIZE_MAX) << line;
    }
    std::printf("%s\n", line.c_str());
    EXPECT_NE(line.find("no NCCL tier"), std::string::npos) << line;
    EXPECT_NE(line.find("GPU 0 holds ranks 0 and 1"), std::string::npos) << line;
}

// Two GPUs with NCCL: the group holds both, measures three algorithms, and an all-reduce sent to
// NCCL (MYRIAD_ALLREDUCE=nccl) sums in F32 (the kernels would round the inputs to BF16 first):
// two ranks' sum is a + b, exact on the CPU.
TEST(GpuAllReduceTiers, NcclIsTheThirdTierOnDistinctGpus) {
    std::string why;
    if (cuda_device_count(&why) < 2) GTEST_SKIP() << "needs 2 GPUs: " << why;
    if (!nccl::library(&why)) GTEST_SKIP() << "NCCL cannot be loaded: " << why;
    for (const char* forced : {"", "nccl"}) {
        if (*forced) setenv("MYRIAD_ALLREDUCE", forced, 1);
        std::shared_ptr<DeviceCommGroup> group = cuda::make_device_comm_group({0, 1});
        ASSERT_TRUE(group->nccl()) << group->nccl_why();
        std::vector<std::thread> threads;
        std::vector<std::string> errors(2);
        const int64_t n = 65536 + 3;
        std::vector<std::vector<float>> got(2);
        for (int r = 0; r < 2; ++r)
            threads.emplace_back([&, r] {
                try {
                    cudaSetDevice(r);
                    cudaStream_t s;
                    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                    {
                        DeviceCommunicator comm(group, r, s, true);
                        DeviceBuf<float> d(n);
                        const std::vector<float> in = rank_y(r, 1, n);
                        cudaMemcpyAsync(d.p, in.data(), sizeof(float) * n, cudaMemcpyHostToDevice,
                                        s);
                        comm.all_reduce_sum(Tensor(d.p, DType::F32, {n}, Device::Cuda));
                        got[static_cast<size_t>(r)] = fetch(d.p, n, s);
                    }
                    cudaStreamDestroy(s);
                } catch (const std::exception& e) {
                    errors[static_cast<size_t>(r)] = e.what();
                    group->barrier().abort(e.what());
                }
            });
        for (auto& t : threads) t.join();
        const std::string line = group->measured_all_reduce();
        std::printf("%s\n", line.c_str());
        EXPECT_NE(line.find("NCCL"), std::string::npos) << line;
        EXPECT_EQ(line.find("no NCCL tier"), std::string::npos) << line;
        for (int r = 0; r < 2; ++r) ASSERT_EQ(errors[static_cast<size_t>(r)], "") << r;
        if (*forced) {
            EXPECT_EQ(group->choice().nccl_from, 0u) << line;
            std::vector<float> want(static_cast<size_t>(n));
            const std::vector<float> a = rank_y(0, 1, n), b = rank_y(1, 1, n);
            for (int64_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
            EXPECT_EQ(first_difference(got[0], want), -1) << "NCCL's F32 sum on rank 0";
            EXPECT_EQ(first_difference(got[1], want), -1) << "NCCL's F32 sum on rank 1";
            unsetenv("MYRIAD_ALLREDUCE");
        }
        EXPECT_EQ(first_difference(got[0], got[1]), -1) << "the ranks' sums differ";
        group.reset();
    }
}

}  // namespace
}  // namespace myriad::testing
