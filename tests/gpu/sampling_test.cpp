// Sampling on the GPU (CudaOps::sample) against the host's choice (ops/token_choice.h) on the
// same logits: rows of every kind (greedy, temperature, top-k, top-p, min-p, edits, host rows,
// ties), a small and the full Kimi vocabulary; and whole engines on the GPU sampling there or on
// the host from the same logits.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_test_util.h"
#include "ops/token_choice.h"
#include "sampling_runs.h"

namespace myriad::testing {
namespace {

TEST_F(GpuOpsTest, SampleMatchesTheHostChoice) {
    for (int64_t vocab : {3000, 163840}) {
        SCOPED_TRACE(::testing::Message() << "vocab " << vocab);
        const int64_t n = vocab > 10000 ? 24 : 160;
        std::vector<float> logits = randn(n * vocab, 3.0f);
        for (int64_t i = 0; i + 1 < n * vocab; i += 7)
            logits[i] = logits[i + 1];  // ties: lower id first
        std::uniform_real_distribution<double> u(0.0, 1.0);
        StepSampling s;
        for (int64_t r = 0; r < n; ++r) {
            SampleRow row;
            const int kind = static_cast<int>(r % 8);
            row.greedy = kind == 0;
            row.host = kind == 7;
            row.inv_temperature = static_cast<float>(1.0 / (0.3 + 1.5 * u(rng)));
            if (kind == 2 || kind == 5) row.top_k = 1 + static_cast<int32_t>(rng() % 60);
            if (kind == 3 || kind == 5) row.top_p = 0.5 + 0.49 * u(rng);
            if (kind == 4 || kind == 5) row.min_p = 0.2 * u(rng);
            row.uniform = u(rng);
            row.edits_begin = static_cast<int32_t>(s.edits.size());
            if (kind == 6) {
                for (int e = 0; e < 20; ++e)
                    s.edits.push_back(
                        {static_cast<int32_t>(rng() % vocab), LogitEdit::Repetition, 1.5f});
                s.edits.push_back({static_cast<int32_t>(rng() % vocab), LogitEdit::Add, 9.0f});
                s.edits.push_back({static_cast<int32_t>(rng() % vocab), LogitEdit::Mask, 0.0f});
            }
            row.edits_end = static_cast<int32_t>(s.edits.size());
            s.rows.push_back(row);
        }
        std::vector<int32_t> want(n, -1);
        std::vector<float> edited = logits;
        for (int64_t r = 0; r < n; ++r) {
            const SampleRow& row = s.rows[r];
            if (row.host) continue;
            float* l = edited.data() + r * vocab;
            apply_logit_edits(l, vocab, s.edits.data() + row.edits_begin,
                              s.edits.data() + row.edits_end);
            want[r] = choose_token(l, vocab, row);
        }
        Tensor d = dev(logits, {n, vocab});
        std::vector<int32_t> got(n, -1);
        std::vector<float> host_rows(n * vocab, -7.0f);
        gpu->sample(d, s, got.data(), host_rows.data());
        int wrong = 0;
        for (int64_t r = 0; r < n; ++r) {
            if (s.rows[r].host) {
                EXPECT_TRUE(std::equal(host_rows.begin() + r * vocab,
                                       host_rows.begin() + (r + 1) * vocab,
                                       logits.begin() + r * vocab))
                    << "host row " << r;
                continue;
            }
            if (got[r] != want[r]) {
                ++wrong;
                ADD_FAILURE() << "row " << r << " (kind " << r % 8 << "): GPU " << got[r]
                              << ", host " << want[r];
            }
        }
        EXPECT_EQ(wrong, 0);
    }
}

// Rows with penalties over the whole vocabulary: 655,360 edits go up in three pieces of the
// backend's fixed buffer (kEditPiece, 262,144), row 1's edits straddle the first boundary, and
// each row's edits must apply in order. A trap shows it: token a (logit 2) gets +9 after the
// repetition penalty (2 / 1.3 + 9 = 10.5) and beats token b (12 / 1.3 = 9.2); the other order
// ((2 + 9) / 1.3 = 8.5) would choose b.
TEST_F(GpuOpsTest, SampleAppliesEditsInPiecesInOrder) {
    const int64_t vocab = 163840, n = 4;
    std::vector<float> logits = randn(n * vocab, 1.0f);
    StepSampling s;
    std::vector<int32_t> trap(n);
    for (int64_t r = 0; r < n; ++r) {
        const auto a = static_cast<int32_t>(rng() % vocab);
        const auto b = static_cast<int32_t>((a + 1 + rng() % (vocab - 1)) % vocab);
        logits[r * vocab + a] = 2.0f;
        logits[r * vocab + b] = 12.0f;
        trap[r] = a;
        SampleRow row;
        row.greedy = r % 2 == 0;
        row.inv_temperature = 10.0f;  // sampled rows: still almost surely the best token
        row.uniform = 0.5;
        row.edits_begin = static_cast<int32_t>(s.edits.size());
        for (int32_t t = 0; t < vocab; ++t) s.edits.push_back({t, LogitEdit::Repetition, 1.3f});
        s.edits.push_back({a, LogitEdit::Add, 9.0f});
        row.edits_end = static_cast<int32_t>(s.edits.size());
        s.rows.push_back(row);
    }
    ASSERT_GT(s.edits.size(), size_t{2} * (size_t{1} << 18));
    std::vector<int32_t> want(n);
    std::vector<float> edited = logits;
    for (int64_t r = 0; r < n; ++r) {
        float* l = edited.data() + r * vocab;
        apply_logit_edits(l, vocab, s.edits.data() + s.rows[r].edits_begin,
                          s.edits.data() + s.rows[r].edits_end);
        want[r] = choose_token(l, vocab, s.rows[r]);
    }
    std::vector<int32_t> got(n, -1);
    gpu->sample(dev(logits, {n, vocab}), s, got.data(), nullptr);
    for (int64_t r = 0; r < n; ++r) {
        EXPECT_EQ(want[r], trap[r]) << "row " << r << ": the host's own choice";
        EXPECT_EQ(got[r], want[r]) << "row " << r;
    }
}

// The engine on the GPU: tokens sampled on the device equal tokens sampled on the host from the
// same GPU logits (both runs compute them with the same kernels on the same inputs).
TEST(GpuBackendSampling, EngineTokensEqualHostSampling) {
    expect_same_outcomes(run_request_kinds(Device::Cuda, BackendSampling::On),
                         run_request_kinds(Device::Cuda, BackendSampling::Off));
}

// The default on one GPU samples there (run_request_kinds checks backend_samples()).
TEST(GpuBackendSampling, AutoSamplesOnTheGpu) {
    expect_same_outcomes(run_request_kinds(Device::Cuda, BackendSampling::Auto),
                         run_request_kinds(Device::Cuda, BackendSampling::Off));
}

}  // namespace
}  // namespace myriad::testing
