// Error checks of the CUDA runtime calls of the GPU communicators.
#pragma once

#include <cuda_runtime_api.h>

#include "util/error.h"

namespace myriad::cuda {

inline void comm_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        internal_error("CUDA error in {}: {} ({})", what, cudaGetErrorString(e),
                       cudaGetErrorName(e));
}

}  // namespace myriad::cuda
