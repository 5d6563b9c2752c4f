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

}  // namespace myriad
