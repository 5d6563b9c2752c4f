// The current GPU's multiprocessor count, read once per device (kernels.h).
#include <cuda_runtime.h>

#include <atomic>

#include "ops/cuda/kernels.h"

namespace myriad::cuda {

int multiprocessors() {
    constexpr int kDevices = 64;
    static std::atomic<int> counts[kDevices];  // 0: not read yet
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) device = 0;
    int n = counts[device].load();
    if (n > 0) return n;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0)
        n = 132;  // no answer: the H200's
    counts[device].store(n);
    return n;
}

}  // namespace myriad::cuda
