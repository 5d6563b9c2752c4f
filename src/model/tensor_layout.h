// Which tensors a DeepSeek-V3 checkpoint must hold, their shapes, and how each is split across
// tensor-parallel ranks (reference.md §1.8). The loader and `myriad inspect` share this table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"

namespace myriad {

enum class ShardKind : uint8_t {
    Replicated,  // every rank holds all of it
    Rows,        // output features split evenly (column-parallel linear, vocabulary)
    Cols,        // input features split evenly (row-parallel linear; partial sums reduced)
};

struct ExpectedTensor {
    std::string name;  // without the checkpoint's prefix
    std::vector<int64_t> shape;
    ShardKind shard = ShardKind::Replicated;
};

// Every tensor the forward pass reads, in load order.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// Bytes of a tensor of `shape` with element size `esize` held by one of `world` ranks.
int64_t shard_bytes(const std::vector<int64_t>& shape, ShardKind shard, int64_t esize, int world);

// Tensors of a checkpoint the text model does not use: the vision tower and projector of
// multimodal checkpoints, and multi-token-prediction layers (reference.md §1.9).
bool is_ignored_tensor(const ModelConfig& config, std::string_view name_without_prefix);

}  // namespace myriad
