// The Ops that a backend may leave to the host: sampling across vocabulary slices and row copies
// through host memory, with the arithmetic of ops/sample_candidates.h.
#include "ops/ops.h"

#include "ops/token_choice.h"
#include "util/error.h"

namespace myriad {

void Ops::slice_candidates(Tensor logits, const SliceSampling& slice, int64_t vocab_begin,
                           Tensor out) {
    const int64_t shard = logits.dim(-1), n = logits.numel() / shard, k = slice.k;
    const int64_t m = static_cast<int64_t>(slice.rows.size());
    MYRIAD_CHECK(static_cast<int64_t>(slice.local.rows.size()) == n && out.numel() == m * 2 * k &&
                     k >= 1 && k <= shard,
                 "slice_candidates: {} sampling rows for logits {}, out {}, k {}",
                 slice.local.rows.size(), logits.shape_str(), out.shape_str(), k);
    std::vector<float> host(static_cast<size_t>(logits.numel()));
    copy_to_host(logits, host.data());
    std::vector<float> cand(static_cast<size_t>(m * 2 * k));
    const StepSampling& local = slice.local;
    for (int64_t j = 0; j < m; ++j) {
        const int32_t i = slice.rows[static_cast<size_t>(j)];
        const SampleRow& row = local.rows[static_cast<size_t>(i)];
        float* l = host.data() + static_cast<int64_t>(i) * shard;
        apply_logit_edits(l, shard, local.edits.data() + row.edits_begin,
                          local.edits.data() + row.edits_end);
        if (row.mask >= 0)
            apply_token_mask(l, shard,
                             local.masks.data() + static_cast<size_t>(row.mask) * local.mask_words);
        slice_candidates_row(l, shard, vocab_begin, k, cand.data() + j * 2 * k);
    }
    copy_from_host(cand.data(), out);
}

void Ops::choose_candidates(Tensor gathered, const SliceSampling& slice,
                            const StepSampling& sampling, int32_t* tokens) {
    const int64_t m = static_cast<int64_t>(slice.rows.size()), k = slice.k;
    const int64_t world = m > 0 && k > 0 ? gathered.numel() / (m * 2 * k) : 0;
    MYRIAD_CHECK(
        world * m * 2 * k == gathered.numel() && sampling.rows.size() == slice.local.rows.size(),
        "choose_candidates: gathered {} for {} rows of {} candidates", gathered.shape_str(), m, k);
    if (m == 0) return;
    std::vector<float> host(static_cast<size_t>(gathered.numel()));
    copy_to_host(gathered, host.data());
    for (int64_t j = 0; j < m; ++j) {
        const int32_t i = slice.rows[static_cast<size_t>(j)];
        tokens[i] = choose_from_candidates(host.data(), world, m, k, j,
                                           sampling.rows[static_cast<size_t>(i)]);
    }
}

void Ops::copy_rows(Tensor src, const std::vector<int32_t>& rows, Tensor dst) {
    const int64_t cols = src.dim(-1), n = src.numel() / cols;
    MYRIAD_CHECK(src.dtype == DType::F32 && dst.dtype == DType::F32 &&
                     dst.numel() == static_cast<int64_t>(rows.size()) * cols,
                 "copy_rows: {} rows of {} into {}", rows.size(), src.shape_str(), dst.shape_str());
    std::vector<float> host(static_cast<size_t>(src.numel()));
    copy_to_host(src, host.data());
    std::vector<float> out(static_cast<size_t>(dst.numel()));
    for (size_t j = 0; j < rows.size(); ++j) {
        MYRIAD_CHECK(rows[j] >= 0 && rows[j] < n, "copy_rows: row {} of {}", rows[j], n);
        std::copy(host.begin() + rows[j] * cols, host.begin() + (rows[j] + 1) * cols,
                  out.begin() + static_cast<int64_t>(j) * cols);
    }
    copy_from_host(out.data(), dst);
}

}  // namespace myriad
