// The seam of the forward pass where a sub-layer's output meets the residual (model/
// residual_reduce.h) on CPU ranks (CpuCommunicator has no fused form, so the default runs): equal
// bit for bit to all_reduce_sum then the ops' add_rmsnorm (or add) on every rank, the same bits on
// every rank, and within float rounding of a reference that sums in rank order, adds and norms in
// double.
#include "model/residual_reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "parallel/cpu_communicator.h"

namespace myriad {
namespace {

std::vector<float> values(uint32_t seed, int64_t n, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng);
    return v;
}

struct RankResult {
    std::vector<float> h, x;          // through reduce_add_rmsnorm
    std::vector<float> h_ref, x_ref;  // through all_reduce_sum then add_rmsnorm / add
};

// Every rank of `world` runs the seam on its own y (the residual and the norm are shared).
std::vector<RankResult> run(int world, int64_t rows, int64_t d, bool with_norm) {
    auto group = std::make_shared<CpuCommGroup>(world);
    const std::vector<float> h0 = values(7, rows * d, 1.0f);
    const std::vector<float> gamma = values(9, d, 0.5f);
    std::vector<RankResult> out(static_cast<size_t>(world));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
            CpuCommunicator comm(group, r);
            CpuOps ops(1);
            std::vector<float> g = gamma;
            Weight norm;
            norm.rows = 1;
            norm.cols = d;
            norm.data = Tensor(g.data(), DType::F32, {d});
            RankResult& res = out[static_cast<size_t>(r)];
            auto pass = [&](bool seam, std::vector<float>& h, std::vector<float>& x) {
                std::vector<float> y = values(100 + static_cast<uint32_t>(r), rows * d, 3.0f);
                h = h0;
                x.assign(static_cast<size_t>(rows * d), std::nanf(""));  // poisoned
                const Tensor ty(y.data(), DType::F32, {rows, d}),
                    th(h.data(), DType::F32, {rows, d}), tx(x.data(), DType::F32, {rows, d});
                if (seam) {
                    reduce_add_rmsnorm(comm, ops, ty, th, with_norm ? &norm : nullptr, 1e-6f, tx);
                } else {
                    comm.all_reduce_sum(ty);
                    if (with_norm)
                        ops.add_rmsnorm(th, ty, norm, 1e-6f, tx);
                    else
                        ops.add(th, ty);
                }
            };
            pass(true, res.h, res.x);
            pass(false, res.h_ref, res.x_ref);
        });
    for (auto& t : threads) t.join();
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ResidualReduce : public ::testing::TestWithParam<int> {};

TEST_P(ResidualReduce, EqualsAllReduceThenAddRmsnormOnEveryRank) {
    const int world = GetParam();
    for (auto [rows, d] : {std::pair<int64_t, int64_t>{1, 2048}, {5, 7168}, {64, 96}})
        for (bool with_norm : {true, false}) {
            const std::vector<RankResult> res = run(world, rows, d, with_norm);
            const std::string what = std::to_string(world) + " ranks, " + std::to_string(rows) +
                                     " x " + std::to_string(d) + (with_norm ? ", norm" : ", add");
            // The reference in double: the sum in rank order, the add, the norm.
            const std::vector<float> h0 = values(7, rows * d, 1.0f);
            const std::vector<float> gamma = values(9, d, 0.5f);
            std::vector<double> h(h0.begin(), h0.end());
            for (int r = 0; r < world; ++r) {
                const std::vector<float> y = values(100 + static_cast<uint32_t>(r), rows * d, 3.0f);
                for (size_t i = 0; i < h.size(); ++i) h[i] += y[i];
            }
            double worst_h = 0, worst_x = 0;
            for (int64_t t = 0; t < rows; ++t) {
                double ss = 0;
                for (int64_t i = 0; i < d; ++i) ss += h[t * d + i] * h[t * d + i];
                const double inv = 1.0 / std::sqrt(ss / double(d) + 1e-6);
                for (int64_t i = 0; i < d; ++i) {
                    const double want_x = gamma[i] * h[t * d + i] * inv;
                    worst_h = std::max(worst_h, std::abs(res[0].h[t * d + i] - h[t * d + i]));
                    if (with_norm)
                        worst_x = std::max(worst_x, std::abs(res[0].x[t * d + i] - want_x));
                }
            }
            EXPECT_LT(worst_h, 1e-5 * world * 4) << what;
            EXPECT_LT(worst_x, 1e-5) << what;
            for (int r = 0; r < world; ++r) {
                const RankResult& a = res[static_cast<size_t>(r)];
                EXPECT_TRUE(same_bits(a.h, a.h_ref)) << what << ": rank " << r << "'s residual";
                EXPECT_TRUE(same_bits(a.h, res[0].h)) << what << ": rank " << r << " vs rank 0";
                if (with_norm) {
                    EXPECT_TRUE(same_bits(a.x, a.x_ref)) << what << ": rank " << r << "'s norm";
                    EXPECT_TRUE(same_bits(a.x, res[0].x)) << what << ": rank " << r << " vs 0";
                } else {
                    EXPECT_TRUE(std::isnan(a.x[0])) << what << ": the plain add wrote x";
                }
            }
        }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ResidualReduce, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace myriad
