// Each RMSNorm's epsilon, on inputs of tiny mean square where epsilon decides the result:
// q_a_layernorm and kv_a_layernorm use 1e-6, every other norm rms_norm_eps (reference.md §1.2).
#include <gtest/gtest.h>

#include <cmath>

#include "model_runner.h"
#include "ops/cpu/cpu_ops.h"
#include "random_model.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

TEST(RmsNorm, UsesEpsilonOnTinyInputs) {
    CpuOps ops(1);
    const int64_t d = 8;
    HostTensor x(DType::F32, {2, d}), out(DType::F32, {2, d}), w(DType::F32, {d});
    for (int64_t i = 0; i < 2 * d; ++i) x.f32()[i] = 1e-4f * static_cast<float>((i % 5) - 2);
    for (int64_t i = 0; i < d; ++i) w.f32()[i] = 1.0f + 0.1f * static_cast<float>(i);
    Weight wt;
    wt.rows = 1;
    wt.cols = d;
    wt.data = w.t;
    for (float eps : {1e-6f, 1e-5f}) {
        ops.rmsnorm(x.t, wt, eps, out.t);
        for (int64_t r = 0; r < 2; ++r) {
            double ms = 0;
            for (int64_t i = 0; i < d; ++i) ms += double(x.f32()[r * d + i]) * x.f32()[r * d + i];
            ms /= d;
            for (int64_t i = 0; i < d; ++i) {
                double want = w.f32()[i] * x.f32()[r * d + i] / std::sqrt(ms + eps);
                EXPECT_NEAR(out.f32()[r * d + i], want, 1e-6 * std::fabs(want) + 1e-9);
            }
        }
    }
}

// add_rmsnorm is the residual add and the next norm in one pass: the same numbers, bit for bit,
// as add then rmsnorm (so fusing them changes no model output).
TEST(RmsNorm, AddRmsnormEqualsAddThenRmsnorm) {
    CpuOps ops(2);
    const int64_t rows = 7, d = 96;
    HostTensor x(DType::F32, {rows, d}), y(DType::F32, {rows, d}), w(DType::F32, {d});
    HostTensor x2(DType::F32, {rows, d}), out(DType::F32, {rows, d}), out2(DType::F32, {rows, d});
    uint32_t s = 12345;
    auto next = [&] {
        s = s * 1664525u + 1013904223u;
        return static_cast<float>(s >> 8) / 8388608.0f - 1.0f;
    };
    for (int64_t i = 0; i < rows * d; ++i) {
        x.f32()[i] = x2.f32()[i] = 3.0f * next();
        y.f32()[i] = next();
    }
    for (int64_t i = 0; i < d; ++i) w.f32()[i] = 1.0f + 0.5f * next();
    Weight wt;
    wt.rows = 1;
    wt.cols = d;
    wt.data = w.t;
    ops.add_rmsnorm(x.t, y.t, wt, 1e-5f, out.t);
    ops.add(x2.t, y.t);
    ops.rmsnorm(x2.t, wt, 1e-5f, out2.t);
    for (int64_t i = 0; i < rows * d; ++i) {
        ASSERT_EQ(x.f32()[i], x2.f32()[i]) << "residual " << i;
        ASSERT_EQ(out.f32()[i], out2.f32()[i]) << "normed " << i;
    }
    HostTensor bad(DType::F32, {rows, d + 1});
    EXPECT_THROW(ops.add_rmsnorm(x.t, bad.t, wt, 1e-5f, out.t), std::exception);
}

// Logits of a random model whose `scaled` tensors are multiplied by 1e-3, under rms_norm_eps.
std::vector<float> logits_with(double rms_norm_eps, const std::map<std::string, float>& scales) {
    TempDir dir;
    auto cfg = small_config();
    cfg["rms_norm_eps"] = rms_norm_eps;
    write_random_model(dir.path(), cfg, 5, scales);
    auto m = load_model(dir.path(), 1);
    return sequence_logits(*m->workers, {3, 17, 42, 99, 5, 60, 61, 7});
}

TEST(NormEpsilon, LatentNormsIgnoreRmsNormEps) {
    // q_a and kv_a outputs of mean square ~1e-7: their norms' epsilon dominates. Changing
    // rms_norm_eps must not matter, since those norms use 1e-6 whatever it says.
    std::map<std::string, float> tiny = {{"q_a_proj.weight", 3e-4f},
                                         {"kv_a_proj_with_mqa.weight", 3e-4f}};
    auto a = logits_with(1e-6, tiny), b = logits_with(1e-4, tiny);
    EXPECT_LT(max_row_rel_diff(a, b, 128), 1e-3);
}

TEST(NormEpsilon, OtherNormsUseRmsNormEps) {
    // Embeddings of mean square ~1e-8: input_layernorm's epsilon decides its output.
    std::map<std::string, float> tiny = {{"embed_tokens.weight", 1e-4f}};
    auto a = logits_with(1e-6, tiny), b = logits_with(1e-5, tiny);
    EXPECT_GT(max_row_rel_diff(a, b, 128), 1e-2);
}

}  // namespace
}  // namespace myriad::testing
