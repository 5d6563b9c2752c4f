// A rank's shapes as the CUDA kernel choices take them (ops/kernel_choices.h), from the model's
// config, the Layout's sharding and the checkpoint's formats: for the workers and the run plan.
#pragma once

#include <set>

#include "model/model_config.h"
#include "ops/kernel_choices.h"
#include "ops/weight.h"
#include "parallel/layout.h"

namespace myriad {

// A rank's shapes for the kernel choices: heads, experts' rows and the vocabulary as `layout`
// shards them, the checkpoint's linear formats and the latent cache's dtype `kv`.
KernelShapes kernel_shapes(const ModelConfig& config, const std::set<WeightFormat>& formats,
                           const Layout& layout, DType kv);

}  // namespace myriad
