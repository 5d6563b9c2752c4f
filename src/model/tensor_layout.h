// Which tensors a DeepSeek-V3 checkpoint must hold, their shapes, and how each is split across
// tensor-parallel ranks (reference.md §1.8; the Layout of src/parallel cuts each). The loader and
// `myriad inspect` share this table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "parallel/layout.h"

namespace myriad {

struct ExpectedTensor {
    std::string name;  // without the checkpoint's prefix
    std::vector<int64_t> shape;
    ShardKind shard = ShardKind::Replicated;
    int64_t expert = -1;  // the routed expert this matrix belongs to; -1 for the others
};

// Every tensor the forward pass reads, in load order.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// The part of `t` rank layout.rank() holds (Layout::shard with the tensor's expert).
TensorShard tensor_shard(const ModelConfig& config, const ExpectedTensor& t, const Layout& layout);

// Tensors of a checkpoint the text model does not use: the vision tower and projector of
// multimodal checkpoints, and multi-token-prediction layers (reference.md §1.9).
bool is_ignored_tensor(const ModelConfig& config, std::string_view name_without_prefix);

}  // namespace myriad
