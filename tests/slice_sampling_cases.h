// Random rows of logits with their sampling (greedy, top-k with top-p and min-p, rows that need
// the whole row, host rows; edits and token masks; ties between logits), and the token a rank
// holding the whole row chooses: the cases of the tests of sampling across vocabulary slices
// (ops/sample_candidates.h) on the CPU and the GPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/sample_candidates.h"
#include "ops/token_choice.h"

namespace myriad::testing {

struct SliceCase {
    int64_t vocab = 0;
    std::vector<float> logits;  // [rows, vocab]
    StepSampling sampling;
};

inline SliceCase make_slice_case(std::mt19937& rng, int64_t rows, int64_t vocab) {
    SliceCase c;
    c.vocab = vocab;
    std::uniform_int_distribution<int> level(-16, 16), pick(0, 99);
    std::uniform_int_distribution<int64_t> token(0, vocab - 1);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    c.logits.resize(static_cast<size_t>(rows * vocab));
    for (float& x : c.logits) x = 0.25f * level(rng);  // coarse: many ties
    c.sampling.mask_words = static_cast<int32_t>((vocab + 31) / 32);
    for (int64_t i = 0; i < rows; ++i) {
        SampleRow r;
        const int kind = pick(rng) % 8;
        r.greedy = kind == 0 || kind == 1;
        r.host = kind == 7;
        if (!r.greedy) {
            r.inv_temperature = static_cast<float>(1.0 / (0.3 + 1.5 * unit(rng)));
            r.top_k = kind == 5 ? 0 : kind == 6 ? 100 : 1 + static_cast<int32_t>(pick(rng) % 64);
            if (pick(rng) % 2) r.top_p = 0.5 + 0.5 * unit(rng);
            if (pick(rng) % 3 == 0) r.min_p = 0.2 * unit(rng);
            r.uniform = unit(rng);
        }
        r.edits_begin = static_cast<int32_t>(c.sampling.edits.size());
        const int n_edits = pick(rng) % 6;
        for (int e = 0; e < n_edits; ++e) {
            LogitEdit ed;
            ed.token = static_cast<int32_t>(token(rng));
            ed.kind = pick(rng) % 3;
            ed.value = ed.kind == LogitEdit::Repetition ? 1.3f : 0.5f * level(rng);
            c.sampling.edits.push_back(ed);
        }
        r.edits_end = static_cast<int32_t>(c.sampling.edits.size());
        if (pick(rng) % 3 == 0) {  // a mask allowing about half the tokens, and one at least
            r.mask = static_cast<int32_t>(c.sampling.masks.size() / c.sampling.mask_words);
            for (int32_t w = 0; w < c.sampling.mask_words; ++w)
                c.sampling.masks.push_back(static_cast<uint32_t>(rng()));
            const int64_t t = token(rng);
            c.sampling.masks[r.mask * c.sampling.mask_words + t / 32] |= 1u << (t % 32);
        }
        if (pick(rng) % 4 == 0)  // a row whose best logits are equal
            for (int64_t t = 0; t < vocab; t += 7) c.logits[i * vocab + t] = 5.0f;
        c.sampling.rows.push_back(r);
    }
    if (c.sampling.masks.empty()) c.sampling.mask_words = 0;
    return c;
}

// The token row i chooses from its whole row, edited and masked (CpuOps::sample's arithmetic).
inline TokenId whole_row_token(const SliceCase& c, int64_t i) {
    std::vector<float> l(c.logits.begin() + i * c.vocab, c.logits.begin() + (i + 1) * c.vocab);
    const SampleRow& r = c.sampling.rows[static_cast<size_t>(i)];
    apply_logit_edits(l.data(), c.vocab, c.sampling.edits.data() + r.edits_begin,
                      c.sampling.edits.data() + r.edits_end);
    if (r.mask >= 0)
        apply_token_mask(l.data(), c.vocab,
                         c.sampling.masks.data() + static_cast<size_t>(r.mask) *
                                                       static_cast<size_t>(c.sampling.mask_words));
    return choose_token(l.data(), c.vocab, r);
}

// Each rank's candidates [m, 2k] (cands[r]) side by side, [m, world * 2k], as
// all_gather_columns places them.
inline std::vector<float> side_by_side(const std::vector<std::vector<float>>& cands, int64_t m) {
    const int64_t world = static_cast<int64_t>(cands.size());
    const int64_t width = m > 0 ? static_cast<int64_t>(cands[0].size()) / m : 0;
    std::vector<float> out(static_cast<size_t>(world * m * width));
    for (int64_t r = 0; r < world; ++r)
        for (int64_t j = 0; j < m; ++j)
            for (int64_t x = 0; x < width; ++x)
                out[(j * world + r) * width + x] = cands[r][j * width + x];
    return out;
}

// Columns [begin, begin + shard) of every row.
inline std::vector<float> slice_columns(const SliceCase& c, int64_t begin, int64_t shard) {
    const int64_t rows = static_cast<int64_t>(c.sampling.rows.size());
    std::vector<float> out(static_cast<size_t>(rows * shard));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < shard; ++j) out[i * shard + j] = c.logits[i * c.vocab + begin + j];
    return out;
}

}  // namespace myriad::testing
