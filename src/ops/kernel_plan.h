// Which CUDA kernels a run will use, decided from the GPU, the architectures this binary was
// built for and the kernel choices (ops/kernel_choices.h: the GPU, a rank's shapes and formats)
// before any weight is read (issue 7, capability resolution): one line per choice, or the reason
// it cannot run there and what would.
#pragma once

#include <string>
#include <vector>

#include "ops/kernel_choices.h"

namespace myriad {

struct GpuKernelPlan {
    std::string stop;                // non-empty: the run cannot use this GPU, and why
    std::vector<std::string> lines;  // the choices, one per line
    KernelChoices choices;           // what the backend runs (when stop is empty)
};

// `built`: the CMAKE_CUDA_ARCHITECTURES entries of this binary ("90a", "100a", "80",
// "90-real", ...); `choices`: the kernel choices for this GPU (their lines follow the GPU's).
GpuKernelPlan plan_gpu_kernels(const GpuInfo& gpu, const std::vector<std::string>& built,
                               const KernelChoices& choices);

}  // namespace myriad
