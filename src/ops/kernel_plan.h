// Which CUDA kernels a run will use, decided from the GPU, the architectures this binary was
// built for and the checkpoint's formats before any weight is read (issue 7, capability
// resolution): one line per choice, or the reason it cannot run there and what would.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ops/weight.h"
#include "util/tensor.h"

namespace myriad {

struct GpuInfo {
    std::string name;     // "NVIDIA H200"
    int cc = 0;           // compute capability, major * 10 + minor (90 for sm_90)
    int index = 0;        // which GPU of the machine (the messages name it)
    uint64_t memory = 0;  // total bytes of its memory (0: unknown)
};

struct GpuKernelPlan {
    std::string stop;                // non-empty: the run cannot use this GPU, and why
    std::vector<std::string> lines;  // the choices, one per line
};

// `built`: the CMAKE_CUDA_ARCHITECTURES entries of this binary ("90a", "100a", "80",
// "90-real", ...); `formats`: the checkpoint's linear formats; `kv`: the latent cache's dtype.
GpuKernelPlan plan_gpu_kernels(const GpuInfo& gpu, const std::vector<std::string>& built,
                               const std::set<WeightFormat>& formats, DType kv);

}  // namespace myriad
