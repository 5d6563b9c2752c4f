// Error checks of CUDA runtime and cuBLASLt calls in the backend's host code.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "util/error.h"

namespace myriad::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        internal_error("CUDA error in {}: {} ({})", what, cudaGetErrorString(e),
                       cudaGetErrorName(e));
}

inline void check_cublas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        internal_error("cuBLASLt error in {}: status {}", what, static_cast<int>(s));
}

}  // namespace myriad::cuda
