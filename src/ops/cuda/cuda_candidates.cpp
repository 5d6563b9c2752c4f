// CudaOps: sampling across vocabulary slices (Ops::slice_candidates, choose_candidates): the
// slice's rows edited and masked as sample() does, their top k by candidate_kernels.cu, and,
// once gathered, the merge and the choice of sample()'s own kernel on the merged lists; only the
// token ids come back.
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "util/error.h"

namespace myriad::cuda {

void CudaOps::slice_candidates(Tensor logits, const SliceSampling& slice, int64_t vocab_begin,
                               Tensor out) {
    if (capturing_ >= 0) finish_capture(logits);  // a captured step ends at its logits
    const int64_t shard = logits.dim(-1), n = logits.numel() / shard, k = slice.k;
    const int64_t m = static_cast<int64_t>(slice.rows.size());
    MYRIAD_CHECK(static_cast<int64_t>(slice.local.rows.size()) == n && out.numel() == m * 2 * k &&
                     k >= 1 && k <= shard,
                 "slice_candidates: {} sampling rows for logits {}, out {}, k {}",
                 slice.local.rows.size(), logits.shape_str(), out.shape_str(), k);
    if (m == 0) return;
    auto* d_logits = logits.ptr<float>();
    edit_rows(d_logits, n, shard, slice.local);  // the other rows are marked host: untouched
    auto* d_rows = static_cast<int32_t*>(ensure(sample_rows_, m * sizeof(int32_t)));
    check_cuda(cudaMemcpyAsync(d_rows, slice.rows.data(), m * sizeof(int32_t),
                               cudaMemcpyHostToDevice, stream_),
               "slice_candidates");
    cuda::slice_topk(d_logits, shard, d_rows, m, k, vocab_begin, out.ptr<float>(), stream_);
    check("slice_candidates");
}

void CudaOps::choose_candidates(Tensor gathered, const SliceSampling& slice,
                                const StepSampling& sampling, int32_t* tokens) {
    const int64_t m = static_cast<int64_t>(slice.rows.size()), k = slice.k;
    const int64_t n = static_cast<int64_t>(sampling.rows.size());
    const int64_t world = m > 0 && k > 0 ? gathered.numel() / (m * 2 * k) : 0;
    MYRIAD_CHECK(
        world * m * 2 * k == gathered.numel() && slice.local.rows.size() == sampling.rows.size(),
        "choose_candidates: gathered {} for {} rows of {} candidates", gathered.shape_str(), m, k);
    if (m == 0) return;
    const int64_t count = world * k;
    auto* meta = static_cast<SampleRow*>(ensure(sample_meta_, n * sizeof(SampleRow)));
    check_cuda(cudaMemcpyAsync(meta, sampling.rows.data(), n * sizeof(SampleRow),
                               cudaMemcpyHostToDevice, stream_),
               "choose_candidates");
    // The candidate rows (rows of the step), then the non-greedy ones' places among them.
    std::vector<int32_t> lists(slice.rows.begin(), slice.rows.end());
    std::vector<int32_t> sampled_rows, slots;
    for (int64_t j = 0; j < m; ++j) {
        const int32_t i = slice.rows[static_cast<size_t>(j)];
        if (!sampling.rows[static_cast<size_t>(i)].greedy) {
            sampled_rows.push_back(i);
            slots.push_back(static_cast<int32_t>(j));
        }
    }
    const int64_t ms = static_cast<int64_t>(sampled_rows.size());
    lists.insert(lists.end(), sampled_rows.begin(), sampled_rows.end());
    lists.insert(lists.end(), slots.begin(), slots.end());
    auto* d_lists = static_cast<int32_t*>(ensure(sample_rows_, lists.size() * sizeof(int32_t)));
    check_cuda(cudaMemcpyAsync(d_lists, lists.data(), lists.size() * sizeof(int32_t),
                               cudaMemcpyHostToDevice, stream_),
               "choose_candidates");
    const size_t list_bytes = static_cast<size_t>(m * count) * sizeof(float);
    auto* ws = static_cast<uint8_t*>(ensure(sample_ws_, 2 * list_bytes + 256));
    auto* keys = reinterpret_cast<float*>(ws);
    auto* vals = reinterpret_cast<int32_t*>(ws + (list_bytes + 255) / 256 * 256);
    auto* d_tokens = static_cast<int32_t*>(ensure(sample_tokens_, n * sizeof(int32_t)));
    cuda::merge_candidates(gathered.ptr<float>(), world, m, k, d_lists, meta, keys, vals, d_tokens,
                           stream_);
    cuda::choose_among_sorted(keys, vals, count, d_lists + m + ms, d_lists + m, ms, meta, d_tokens,
                              stream_);
    check("choose_candidates");
    std::vector<int32_t> chosen(static_cast<size_t>(n));
    synchronize("choose_candidates");  // before the pageable copy (copy_to_host says why)
    check_cuda(cudaMemcpyAsync(chosen.data(), d_tokens, n * sizeof(int32_t), cudaMemcpyDeviceToHost,
                               stream_),
               "choose_candidates");
    synchronize("choose_candidates");
    for (int32_t i : slice.rows) tokens[i] = chosen[static_cast<size_t>(i)];
}

void CudaOps::copy_rows(Tensor src, const std::vector<int32_t>& rows, Tensor dst) {
    const int64_t cols = src.dim(-1), n = src.numel() / cols;
    MYRIAD_CHECK(src.dtype == DType::F32 && dst.dtype == DType::F32 &&
                     dst.numel() == static_cast<int64_t>(rows.size()) * cols,
                 "copy_rows: {} rows of {} into {}", rows.size(), src.shape_str(), dst.shape_str());
    const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
    for (size_t j = 0; j < rows.size(); ++j) {
        MYRIAD_CHECK(rows[j] >= 0 && rows[j] < n, "copy_rows: row {} of {}", rows[j], n);
        check_cuda(cudaMemcpyAsync(dst.ptr<float>() + j * cols, src.ptr<float>() + rows[j] * cols,
                                   row_bytes, cudaMemcpyDeviceToDevice, stream_),
                   "copy_rows");
    }
}

}  // namespace myriad::cuda
