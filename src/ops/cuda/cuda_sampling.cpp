// CudaOps: sampling on the device (Ops::sample): the step's rows and edits uploaded, the kernels
// of sampling_kernels.cu, and only the token ids (and the rows the engine samples itself) copied
// back.
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "util/error.h"

namespace myriad::cuda {

void* CudaOps::ensure(DeviceBuffer& b, size_t bytes) {
    if (b.size() < bytes) b = DeviceBuffer(std::max(bytes, b.size() * 2));
    return b.data();
}

SampleRow* CudaOps::edit_rows(float* d_logits, int64_t n, int64_t vocab,
                              const StepSampling& sampling) {
    auto* meta = static_cast<SampleRow*>(ensure(sample_meta_, n * sizeof(SampleRow)));
    check_cuda(cudaMemcpyAsync(meta, sampling.rows.data(), n * sizeof(SampleRow),
                               cudaMemcpyHostToDevice, stream_),
               "sample");
    // The edits a piece at a time through one fixed buffer (stream order keeps a piece's
    // upload after the previous piece's kernel), each row's in the list's order.
    const size_t n_edits = sampling.edits.size();
    if (n_edits > 0) {
        auto* edits = static_cast<LogitEdit*>(sample_edits_.data());  // sized at construction
        for (size_t first = 0; first < n_edits; first += kEditPiece) {
            const size_t count = std::min(kEditPiece, n_edits - first);
            check_cuda(cudaMemcpyAsync(edits, sampling.edits.data() + first,
                                       count * sizeof(LogitEdit), cudaMemcpyHostToDevice, stream_),
                       "sample");
            cuda::apply_edits(d_logits, n, vocab, meta, edits, static_cast<int64_t>(first),
                              static_cast<int64_t>(count), stream_);
        }
    }
    // Structured output: the masked rows' bitmasks up in one copy, applied after the edits.
    if (!sampling.masks.empty()) {
        MYRIAD_CHECK(sampling.mask_words >= (vocab + 31) / 32,
                     "token masks of {} words for a vocabulary of {}", sampling.mask_words, vocab);
        const size_t bytes = sampling.masks.size() * sizeof(uint32_t);
        auto* d_masks = static_cast<uint32_t*>(ensure(sample_masks_, bytes));
        check_cuda(
            cudaMemcpyAsync(d_masks, sampling.masks.data(), bytes, cudaMemcpyHostToDevice, stream_),
            "sample (token masks)");
        cuda::apply_token_masks(d_logits, n, vocab, meta, d_masks, sampling.mask_words, stream_);
    }
    return meta;
}

void CudaOps::sample(Tensor logits, const StepSampling& sampling, int32_t* tokens,
                     float* host_logits) {
    if (capturing_ >= 0) finish_capture(logits);  // a captured step ends at its logits
    const int64_t vocab = logits.dim(-1), n = logits.numel() / vocab;
    MYRIAD_CHECK(static_cast<int64_t>(sampling.rows.size()) == n,
                 "sampling for {} rows, logits of {}", sampling.rows.size(), n);
    if (n == 0) return;
    auto* d_logits = logits.ptr<float>();
    SampleRow* meta = edit_rows(d_logits, n, vocab, sampling);
    auto* d_tokens = static_cast<int32_t*>(ensure(sample_tokens_, n * sizeof(int32_t)));
    cuda::argmax(d_logits, n, vocab, d_tokens, stream_);  // every row; sampled rows overwrite
    std::vector<int32_t> sorted;
    for (int64_t i = 0; i < n; ++i) {
        const SampleRow& r = sampling.rows[static_cast<size_t>(i)];
        if (!r.greedy && !r.host) sorted.push_back(static_cast<int32_t>(i));
    }
    if (!sorted.empty()) {
        const int64_t m = static_cast<int64_t>(sorted.size());
        auto* d_rows = static_cast<int32_t*>(ensure(sample_rows_, m * sizeof(int32_t)));
        check_cuda(cudaMemcpyAsync(d_rows, sorted.data(), m * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream_),
                   "sample");
        const size_t wb = cuda::sort_workspace_bytes(m, vocab);
        void* ws = ensure(sample_ws_, wb);
        check_cuda(cuda::sample_sorted(d_logits, vocab, d_rows, m, meta, d_tokens, ws,
                                       sample_ws_.size(), stream_),
                   "sample (sort and choice)");
    }
    check("sample");
    check_cuda(
        cudaMemcpyAsync(tokens, d_tokens, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
        "sample");
    for (int64_t i = 0; i < n; ++i)
        if (sampling.rows[static_cast<size_t>(i)].host)
            check_cuda(cudaMemcpyAsync(host_logits + i * vocab, d_logits + i * vocab,
                                       vocab * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                       "sample");
    synchronize("sample");
}

}  // namespace myriad::cuda
