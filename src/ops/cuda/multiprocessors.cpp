// The current GPU's multiprocessor count, read once (kernels.h).
#include <cuda_runtime.h>

#include "ops/cuda/kernels.h"

namespace myriad::cuda {

int multiprocessors() {
    static const int count = [] {
        int device = 0, n = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
            n <= 0)
            n = 132;  // no answer: the H200's
        return n;
    }();
    return count;
}

}  // namespace myriad::cuda
