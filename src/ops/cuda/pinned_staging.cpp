#include "ops/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

#include "ops/cuda/cuda_check.h"

namespace myriad::cuda {

PinnedStaging::PinnedStaging(size_t buffer_bytes, int buffers)
    : buffer_bytes_(std::max<size_t>(buffer_bytes, 4096)), count_(std::max(2, buffers)) {}

PinnedStaging::~PinnedStaging() {
    if (copy_) cudaStreamSynchronize(copy_);  // no throwing here: errors surface in release()
    for (Buffer& b : buffers_) {
        if (b.copied) cudaEventDestroy(b.copied);
        if (b.host) cudaFreeHost(b.host);
    }
    if (last_) cudaEventDestroy(last_);
    if (copy_) cudaStreamDestroy(copy_);
}

void PinnedStaging::ensure() {
    if (!copy_) {
        // Non-blocking: the copies do not order with the legacy default stream's work.
        check_cuda(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "copy stream");
        check_cuda(cudaEventCreateWithFlags(&last_, cudaEventDisableTiming), "copy event");
    }
    if (!buffers_.empty()) return;
    buffers_.resize(static_cast<size_t>(count_));
    for (Buffer& b : buffers_) {
        void* p = nullptr;
        check_cuda(cudaHostAlloc(&p, buffer_bytes_, cudaHostAllocDefault), "pinned staging buffer");
        b.host = static_cast<uint8_t*>(p);
        check_cuda(cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming), "staging event");
    }
    next_ = 0;
}

void PinnedStaging::upload_rows(void* dst, int64_t rows, size_t row_bytes,
                                const std::function<void(int64_t, int64_t, uint8_t*)>& fill) {
    if (rows <= 0 || row_bytes == 0) return;
    if (row_bytes > buffer_bytes_) {  // a row wider than a buffer: one pageable copy per row
        std::vector<uint8_t> host(row_bytes);
        for (int64_t r = 0; r < rows; ++r) {
            fill(r, 1, host.data());
            check_cuda(cudaMemcpy(static_cast<uint8_t*>(dst) + static_cast<size_t>(r) * row_bytes,
                                  host.data(), row_bytes, cudaMemcpyHostToDevice),
                       "weight upload");
        }
        return;
    }
    ensure();
    const auto per = static_cast<int64_t>(buffer_bytes_ / row_bytes);
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t n = std::min(per, rows - r0);
        Buffer& b = buffers_[static_cast<size_t>(next_)];
        next_ = (next_ + 1) % count_;
        if (b.in_flight) check_cuda(cudaEventSynchronize(b.copied), "staging buffer reuse");
        fill(r0, n, b.host);  // while the other buffers copy
        check_cuda(cudaMemcpyAsync(static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * row_bytes,
                                   b.host, static_cast<size_t>(n) * row_bytes,
                                   cudaMemcpyHostToDevice, copy_),
                   "weight upload");
        check_cuda(cudaEventRecord(b.copied, copy_), "staging event");
        b.in_flight = true;
    }
}

void PinnedStaging::upload(void* dst, const void* src, size_t bytes) {
    const auto* s = static_cast<const uint8_t*>(src);
    const size_t piece = std::min(bytes, buffer_bytes_);
    if (piece == 0) return;
    const auto rows = static_cast<int64_t>(bytes / piece);
    upload_rows(dst, rows, piece, [&](int64_t first, int64_t count, uint8_t* host) {
        std::memcpy(host, s + static_cast<size_t>(first) * piece,
                    static_cast<size_t>(count) * piece);
    });
    if (const size_t tail = bytes - static_cast<size_t>(rows) * piece; tail > 0)
        upload_rows(
            static_cast<uint8_t*>(dst) + bytes - tail, 1, tail,
            [&](int64_t, int64_t, uint8_t* host) { std::memcpy(host, s + bytes - tail, tail); });
}

void PinnedStaging::order_before(cudaStream_t stream) {
    if (!copy_) return;
    check_cuda(cudaEventRecord(last_, copy_), "copy event");
    check_cuda(cudaStreamWaitEvent(stream, last_, 0), "wait for weight copies");
}

void PinnedStaging::release() {
    if (copy_) check_cuda(cudaStreamSynchronize(copy_), "weight copies");
    for (Buffer& b : buffers_) {
        if (b.copied) cudaEventDestroy(b.copied);
        if (b.host) cudaFreeHost(b.host);
    }
    buffers_.clear();
}

}  // namespace myriad::cuda
