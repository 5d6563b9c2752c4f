// DeepseekV3: the step's tokens chosen across vocabulary-sliced ranks (ops/sample_candidates.h).
// Each rank's lm_head slice gives its candidates of the rows that can be chosen from them; the
// ranks gather those (world * k candidates a row) and every rank chooses the same tokens. The
// other rows are gathered whole: sampled where they are as one rank's device would, or copied to
// the host for the engine (rows marked host).
#include <algorithm>
#include <cstring>

#include "model/deepseek_v3.h"
#include "util/error.h"

namespace myriad {

Tensor DeepseekV3::sampling_buffer(size_t slot, DType dt, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, dt, dims, ops_.device());
    SamplingBuffer& b = sampling_buffers_[slot];
    if (b.bytes < t.nbytes()) {
        // Grown to twice what is asked, so a batch that grows a row at a time reallocates rarely.
        const size_t bytes = std::max<size_t>(t.nbytes() * 2, 256);
        Tensor whole(nullptr, DType::F32, {static_cast<int64_t>((bytes + 3) / 4)});
        b.storage = ops_.allocate(whole);
        b.data = whole.data;
        b.bytes = bytes;
    }
    t.data = b.data;
    return t;
}

void DeepseekV3::sample_across_ranks(Tensor part, const StepSampling& sampling, int32_t* tokens,
                                     float* logits) {
    const int64_t n = part.dim(0), shard = part.dim(1), world = comm_.world();
    const int64_t vocab = config_.vocab_size;
    const SliceSampling slice = slice_sampling(sampling, weights_.vocab_begin, shard);
    const int64_t m = static_cast<int64_t>(slice.rows.size()), k = slice.k;
    const int64_t g = static_cast<int64_t>(slice.full.size());
    // The whole rows first: slice_candidates may edit the candidate rows of `part` in place.
    if (g > 0) {
        Tensor rows = part;
        if (g < n) {
            rows = sampling_buffer(0, DType::F32, {g, shard});
            ops_.copy_rows(part, slice.full, rows);
        }
        Tensor whole = sampling_buffer(1, DType::F32, {g, world * shard});
        comm_.all_gather_columns(rows, whole);
        StepSampling sub;
        sub.edits = sampling.edits;
        sub.mask_words = sampling.mask_words;
        sub.masks = sampling.masks;
        bool any_host = false;
        for (int32_t i : slice.full) {
            sub.rows.push_back(sampling.rows[static_cast<size_t>(i)]);
            any_host = any_host || sub.rows.back().host;
        }
        std::vector<int32_t> sub_tokens(static_cast<size_t>(g), -1);
        std::vector<float> host;
        if (any_host) host.resize(static_cast<size_t>(g * vocab));
        ops_.sample(whole, sub, sub_tokens.data(), host.data());
        for (int64_t j = 0; j < g; ++j) {
            const int32_t i = slice.full[static_cast<size_t>(j)];
            if (sub.rows[static_cast<size_t>(j)].host)
                std::memcpy(logits + i * vocab, host.data() + j * vocab, vocab * sizeof(float));
            else
                tokens[i] = sub_tokens[static_cast<size_t>(j)];
        }
    }
    if (m > 0) {
        Tensor cand = sampling_buffer(2, DType::F32, {m, 2 * k});
        ops_.slice_candidates(part, slice, weights_.vocab_begin, cand);
        // Side by side ([m, world * 2k]): on GPUs the gather that waits on the device alone.
        Tensor gathered = sampling_buffer(3, DType::F32, {m, world * 2 * k});
        comm_.all_gather_columns(cand, gathered);
        ops_.choose_candidates(gathered, slice, sampling, tokens);
    }
}

}  // namespace myriad
