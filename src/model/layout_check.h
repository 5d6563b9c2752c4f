// Whether a model can run in a Layout, decided from its config before any weight is read: the
// heads, the vocabulary and the intermediate widths each rank cuts must divide evenly, and a
// quantised linear's column shard must hold whole NVFP4 groups of 16 or INT4 groups (FP8
// 128x128 blocks may be cut: each rank keeps the scales of the blocks it touches).
#pragma once

#include <string>

#include "model/model_config.h"
#include "parallel/layout.h"

namespace myriad {

// Bad input naming the field or tensor, its size and the --tp values that work.
void check_layout(const ModelConfig& config, const Layout& layout, const std::string& prefix = "");

// Why the CUDA kernels cannot run `layout` (empty: they can): every linear's shard must have a
// multiple of 8 input columns (eight elements share a load and a scale lookup), starting at a
// multiple of 8. Names the tensor, its shard and the --tp values whose shards the GPU takes.
std::string gpu_layout_problem(const ModelConfig& config, const Layout& layout,
                               const std::string& prefix = "");

// The --tp values (powers of two up to the head count) check_layout accepts.
std::vector<int> working_tp_sizes(const ModelConfig& config, bool expert_parallel);

}  // namespace myriad
