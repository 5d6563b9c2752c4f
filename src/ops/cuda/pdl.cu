// Whether kernels launched on a stream start early (pdl.cuh): the streams whose backend's
// KernelChoices::pdl is off, registered by the backend (kernels.h: set_stream_pdl). Every other
// stream launches early. The common case, no stream registered, reads one atomic.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "ops/cuda/kernels.h"
#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

namespace {
std::mutex off_mutex;
std::vector<cudaStream_t> off_streams;  // under off_mutex
std::atomic<size_t> off_count{0};
}  // namespace

void set_stream_pdl(cudaStream_t s, bool on) {
    std::lock_guard<std::mutex> lock(off_mutex);
    auto it = std::find(off_streams.begin(), off_streams.end(), s);
    if (on && it != off_streams.end()) off_streams.erase(it);
    if (!on && it == off_streams.end()) off_streams.push_back(s);
    off_count.store(off_streams.size());
}

bool pdl_enabled(cudaStream_t s) {
    if (off_count.load(std::memory_order_relaxed) == 0) return true;
    std::lock_guard<std::mutex> lock(off_mutex);
    return std::find(off_streams.begin(), off_streams.end(), s) == off_streams.end();
}

}  // namespace myriad::cuda
