// Structured output's token masks on the GPU (CudaOps::sample) against the host's reference
// (apply_token_mask, then choose_token) on the same logits: masks of every density (one token
// allowed, a few, half, all), rows without a mask, masked host rows (left untouched), masks
// with edits; a small vocabulary whose size is not a multiple of 32, and Kimi's full one.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "ops/token_choice.h"

namespace myriad::testing {
namespace {

TEST_F(GpuOpsTest, MaskedSampleMatchesTheHostChoice) {
    for (int64_t vocab : {3001, 163840}) {
        SCOPED_TRACE(::testing::Message() << "vocab " << vocab);
        const int64_t n = vocab > 10000 ? 24 : 96;
        const int32_t words = static_cast<int32_t>((vocab + 31) / 32);
        std::vector<float> logits = randn(n * vocab, 3.0f);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        StepSampling s;
        s.mask_words = words;
        for (int64_t r = 0; r < n; ++r) {
            SampleRow row;
            const int kind = static_cast<int>(r % 6);
            row.greedy = r % 4 == 0;
            row.host = r % 11 == 5;
            row.inv_temperature = static_cast<float>(1.0 / (0.3 + 1.5 * u(rng)));
            if (r % 3 == 1) row.top_k = 1 + static_cast<int32_t>(rng() % 60);
            if (r % 5 == 2) row.top_p = 0.5 + 0.49 * u(rng);
            row.uniform = u(rng);
            row.edits_begin = static_cast<int32_t>(s.edits.size());
            if (r % 7 == 3)
                for (int e = 0; e < 10; ++e)
                    s.edits.push_back({static_cast<int32_t>(rng() % vocab), LogitEdit::Add, 6.0f});
            row.edits_end = static_cast<int32_t>(s.edits.size());
            if (kind != 5) {  // kind 5: no mask
                row.mask = static_cast<int32_t>(s.masks.size() / words);
                std::vector<uint32_t> m(words, 0u);
                auto allow = [&](int64_t t) { m[t >> 5] |= 1u << (t & 31); };
                if (kind == 0) allow(static_cast<int64_t>(rng() % vocab));  // one token
                if (kind == 1)
                    for (int i = 0; i < 7; ++i) allow(static_cast<int64_t>(rng() % vocab));
                if (kind == 2)
                    for (int64_t t = 0; t < vocab; ++t)
                        if (rng() % 2) allow(t);
                if (kind == 3) std::fill(m.begin(), m.end(), ~0u);  // all (past vocab too)
                if (kind == 4)                                      // a dense run in the middle
                    for (int64_t t = vocab / 3; t < vocab / 3 + 200; ++t) allow(t);
                s.masks.insert(s.masks.end(), m.begin(), m.end());
            }
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
            if (row.mask >= 0)
                apply_token_mask(l, vocab, s.masks.data() + static_cast<size_t>(row.mask) * words);
            want[r] = choose_token(l, vocab, row);
        }
        Tensor d = dev(logits, {n, vocab});
        std::vector<int32_t> got(n, -1);
        std::vector<float> host_rows(n * vocab, -7.0f);
        gpu->sample(d, s, got.data(), host_rows.data());
        int wrong = 0;
        for (int64_t r = 0; r < n; ++r) {
            const SampleRow& row = s.rows[r];
            if (row.host) {
                EXPECT_TRUE(std::equal(host_rows.begin() + r * vocab,
                                       host_rows.begin() + (r + 1) * vocab,
                                       logits.begin() + r * vocab))
                    << "host row " << r;
                continue;
            }
            if (row.mask >= 0) {
                const uint32_t* m = s.masks.data() + static_cast<size_t>(row.mask) * words;
                EXPECT_TRUE(got[r] >= 0 && got[r] < vocab && (m[got[r] >> 5] >> (got[r] & 31) & 1u))
                    << "row " << r << " chose " << got[r] << ", which its mask refuses";
            }
            if (got[r] != want[r]) {
                ++wrong;
                ADD_FAILURE() << "row " << r << " (kind " << r % 6 << "): GPU " << got[r]
                              << ", host " << want[r];
            }
        }
        EXPECT_EQ(wrong, 0);
    }
}

}  // namespace
}  // namespace myriad::testing
