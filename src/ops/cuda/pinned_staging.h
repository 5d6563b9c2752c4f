// PinnedStaging: weight uploads through a few pinned host buffers. The rank's thread fills one
// (packing the shard's rows out of the mapped checkpoint, whose pages the shard reader brought
// in) while the buffers filled before it are copied to the GPU with cudaMemcpyAsync on a copy
// stream of their own: the host fill and the host-to-device copy overlap, and the copy runs at
// pinned speed instead of through the driver's pageable bounce buffer. Buffers are taken at the
// first upload and given back by release() once the weights are loaded. One per CudaOps.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace myriad::cuda {

class PinnedStaging {
  public:
    explicit PinnedStaging(size_t buffer_bytes = size_t{32} << 20, int buffers = 3);
    ~PinnedStaging();
    PinnedStaging(const PinnedStaging&) = delete;
    PinnedStaging& operator=(const PinnedStaging&) = delete;

    // Copies `rows` rows of `row_bytes` each to `dst` (device memory, rows contiguous);
    // fill(first, count, host) writes rows [first, first + count) packed at `host`. Returns when
    // every row is on its way (the host memory fill reads is no longer needed).
    void upload_rows(void* dst, int64_t rows, size_t row_bytes,
                     const std::function<void(int64_t first, int64_t count, uint8_t* host)>& fill);
    // `bytes` contiguous bytes of host memory `src` to `dst`.
    void upload(void* dst, const void* src, size_t bytes);
    // Work enqueued on `stream` from now on waits for every copy enqueued so far (no host wait).
    void order_before(cudaStream_t stream);
    // Waits for the copies and frees the buffers (the next upload takes them again).
    void release();

  private:
    void ensure();
    struct Buffer {
        uint8_t* host = nullptr;
        cudaEvent_t copied = nullptr;
        bool in_flight = false;
    };
    size_t buffer_bytes_;
    int count_;
    cudaStream_t copy_ = nullptr;
    cudaEvent_t last_ = nullptr;
    std::vector<Buffer> buffers_;
    int next_ = 0;
};

}  // namespace myriad::cuda
