#include "ops/sample_candidates.h"

#include "ops/token_choice.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace myriad {

namespace {

float id_bits(TokenId id) {
    float f;
    std::memcpy(&f, &id, sizeof f);
    return f;
}

TokenId bits_id(float f) {
    TokenId id;
    std::memcpy(&id, &f, sizeof id);
    return id;
}

}  // namespace

bool samples_from_candidates(const SampleRow& row, int64_t shard) {
    if (row.host || (!row.greedy && (row.top_k <= 0 || row.top_k > kMaxSliceCandidates)))
        return false;
    const int64_t need = row.greedy ? 1 : row.top_k;
    return 2 * need < shard;  // a logit and an id each: fewer bytes than the slice itself
}

SliceSampling slice_sampling(const StepSampling& sampling, int64_t vocab_begin, int64_t shard) {
    SliceSampling s;
    int64_t k = 0;
    for (size_t i = 0; i < sampling.rows.size(); ++i) {
        const SampleRow& r = sampling.rows[i];
        if (samples_from_candidates(r, shard)) {
            s.rows.push_back(static_cast<int32_t>(i));
            k = std::max<int64_t>(k, r.greedy ? 1 : r.top_k);
        } else {
            s.full.push_back(static_cast<int32_t>(i));
        }
    }
    s.k = k;
    StepSampling& local = s.local;
    local.rows = sampling.rows;
    for (SampleRow& r : local.rows) r.host = true;
    for (int32_t i : s.rows) local.rows[static_cast<size_t>(i)].host = false;
    local.edits = sampling.edits;
    for (LogitEdit& e : local.edits) e.token -= static_cast<int32_t>(vocab_begin);
    if (sampling.mask_words > 0 && !sampling.masks.empty()) {
        // The slice's bits of every mask, re-packed from bit 0 (the slice need not start on a
        // word of the whole vocabulary's mask).
        const int64_t words = (shard + 31) / 32,
                      n = static_cast<int64_t>(sampling.masks.size()) / sampling.mask_words;
        local.mask_words = static_cast<int32_t>(words);
        local.masks.assign(static_cast<size_t>(n * words), 0u);
        for (int64_t m = 0; m < n; ++m) {
            const uint32_t* src = sampling.masks.data() + m * sampling.mask_words;
            uint32_t* dst = local.masks.data() + m * words;
            for (int64_t c = 0; c < shard; ++c) {
                const int64_t t = vocab_begin + c;
                if (src[t >> 5] >> (t & 31) & 1u) dst[c >> 5] |= 1u << (c & 31);
            }
        }
    }
    return s;
}

void slice_candidates_row(const float* logits, int64_t shard, int64_t vocab_begin, int64_t k,
                          float* out) {
    std::vector<int32_t> order(static_cast<size_t>(shard));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int64_t i = 0; i < k; ++i) {
        out[i] = logits[order[i]];
        out[k + i] = id_bits(static_cast<TokenId>(vocab_begin + order[i]));
    }
}

TokenId choose_from_candidates(const float* gathered, int64_t world, int64_t m, int64_t k,
                               int64_t j, const SampleRow& row) {
    (void)m;  // the layout needs only world and k
    const int64_t count = world * k;
    std::vector<float> l(static_cast<size_t>(count));
    std::vector<TokenId> ids(static_cast<size_t>(count));
    for (int64_t r = 0; r < world; ++r) {
        const float* c = gathered + (j * world + r) * 2 * k;
        for (int64_t i = 0; i < k; ++i) {
            l[r * k + i] = c[i];
            ids[r * k + i] = bits_id(c[k + i]);
        }
    }
    std::vector<int32_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return l[a] > l[b] || (l[a] == l[b] && ids[a] < ids[b]);
    });
    std::vector<float> sl(static_cast<size_t>(count));
    std::vector<TokenId> sid(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
        sl[i] = l[order[i]];
        sid[i] = ids[order[i]];
    }
    return choose_among_sorted(sl.data(), sid.data(), count, row);
}

}  // namespace myriad
