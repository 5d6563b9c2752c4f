// CudaOps: logprobs at chosen rows (Ops::logprob_rows) on the device: the targets go up, the
// kernel of logprob_kernels.cu runs where the logits are, and only the target's logprob and the
// top N of each row come back.
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "util/error.h"

namespace myriad::cuda {

void CudaOps::logprob_rows(Tensor logits, int64_t vocab, const TokenId* targets, int64_t top_n,
                           float* target, TokenId* top_ids, float* top) {
    MYRIAD_CHECK(
        logits.ndim == 3 && logits.device == Device::Cuda && top_n >= 0 && top_n <= kMaxTopLogprobs,
        "logprob_rows on logits of shape {} with top {}", logits.shape_str(), top_n);
    const int64_t n = logits.dim(1);
    if (n == 0) return;
    // One device block: the targets [n], then the results target [n], ids [n, top_n] and
    // logprobs [n, top_n] (4-byte elements throughout).
    const size_t rows = static_cast<size_t>(n), cells = rows * static_cast<size_t>(top_n);
    auto* io = static_cast<uint8_t*>(ensure(logprob_io_, (2 * rows + 2 * cells) * 4));
    auto* d_targets = reinterpret_cast<int32_t*>(io);
    auto* d_target = reinterpret_cast<float*>(io + rows * 4);
    auto* d_ids = reinterpret_cast<int32_t*>(io + 2 * rows * 4);
    auto* d_top = reinterpret_cast<float*>(io + (2 * rows + cells) * 4);
    check_cuda(cudaMemcpyAsync(d_targets, targets, rows * 4, cudaMemcpyHostToDevice, stream_),
               "logprob_rows");
    cuda::logprob_rows(logits.ptr<float>(), logits.dim(0), n, logits.dim(2), vocab, d_targets,
                       top_n, d_target, d_ids, d_top, stream_);
    check("logprob_rows");
    check_cuda(cudaMemcpyAsync(target, d_target, rows * 4, cudaMemcpyDeviceToHost, stream_),
               "logprob_rows");
    if (cells > 0) {
        check_cuda(cudaMemcpyAsync(top_ids, d_ids, cells * 4, cudaMemcpyDeviceToHost, stream_),
                   "logprob_rows");
        check_cuda(cudaMemcpyAsync(top, d_top, cells * 4, cudaMemcpyDeviceToHost, stream_),
                   "logprob_rows");
    }
    synchronize("logprob_rows");
}

}  // namespace myriad::cuda
