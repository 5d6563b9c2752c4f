// Whether kernels start early (pdl.cuh): on unless MYRIAD_CUDA_PDL=0.
#include <cstdlib>
#include <cstring>

#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

bool pdl_enabled() {
    static const bool on = [] {
        const char* e = std::getenv("MYRIAD_CUDA_PDL");
        return !(e && std::strcmp(e, "0") == 0);
    }();
    return on;
}

}  // namespace myriad::cuda
