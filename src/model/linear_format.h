// Which runtime format each linear layer of a checkpoint has, and the tensors that format stores
// (reference.md §2): decided from the quantisation config before any weight is read, then every
// tensor is expected exactly (name, dtype, shape).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "ops/weight.h"

namespace myriad {

// A linear layer's weight: "*_proj.weight", "kv_a_proj_with_mqa.weight" or "lm_head.weight" (the
// router mlp.gate is not one).
bool is_linear_weight(std::string_view name);

// The format of linear `name` (without the checkpoint prefix `prefix`).
WeightFormat linear_format(const ModelConfig& config, std::string_view name,
                           std::string_view prefix);

// The formats of all linear layers of `checkpoint` (GGUF: GgufBlock if any of its tensors is
// block-quantised), decided without reading a weight.
std::set<WeightFormat> checkpoint_linear_formats(const ModelConfig& config,
                                                 const Checkpoint& checkpoint);

// One checkpoint tensor a linear in some format consists of.
struct StoredTensor {
    std::string name;  // with the checkpoint prefix
    std::vector<int64_t> shape;
    std::vector<DType> dtypes;  // accepted dtypes
    bool scalar = false;        // shape [] or [1]
};

// The tensors holding linear `t` in `format` (just "<name>" for Dense). A logical shape that
// the format cannot pack (NVFP4 inputs not a multiple of 16, ...) is bad input naming it.
std::vector<StoredTensor> stored_tensors(const ModelConfig& config, const ExpectedTensor& t,
                                         WeightFormat format, const std::string& prefix);

// Checks that `t`'s shard in `layout` falls on whole blocks where the packing needs it (NVFP4
// inputs by 16, INT4 by the group; FP8 scales use global block indices, so any split works;
// whole experts under expert parallelism are never cut). Bad input names the tensor and --tp.
void check_quantized_sharding(const ModelConfig& config, const ExpectedTensor& t,
                              WeightFormat format, const Layout& layout, const std::string& prefix);

// Checks presence, dtypes and shapes of every stored tensor of `t` and returns the source of the
// whole (unsharded) weight; its quant.bytes count the whole tensor. Errors name the file, the
// tensor, what was found and expected, and which config asked for the format.
WeightSource linear_source(const ModelConfig& config, const Checkpoint& checkpoint,
                           const ExpectedTensor& t, WeightFormat format, const std::string& prefix);

}  // namespace myriad
