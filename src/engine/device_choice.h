// The device of a run, decided before any weight is read: --device (auto, cpu, cuda) with the
// GPU's kernel plan for this checkpoint (ops/kernel_plan.h). Where the GPU cannot run it, auto
// falls back to the CPU saying why, and cuda stops with the reason and what would work.
#pragma once

#include <string>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "ops/kernel_plan.h"

namespace myriad {

// GPU `device`'s kernel plan for this checkpoint with latent cache `kv` (stop set when there is
// no such GPU).
GpuKernelPlan gpu_kernel_plan(const ModelConfig& config, const Checkpoint& checkpoint, DType kv,
                              int device = 0);

// The device for --device `flag`, --tp `tp` and --devices `devices`; `note` gets the line to
// print, if any.
Device choose_device(const std::string& flag, int tp, const ModelConfig& config,
                     const Checkpoint& checkpoint, std::string* note,
                     const std::string& devices = "");

}  // namespace myriad
