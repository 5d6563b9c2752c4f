// The bytes of a checkpoint's weights, tensor by tensor, and how each is split over GPUs: from
// config.json and the quantisation config alone (shapes follow from the architecture), or from
// the safetensors headers when they are at hand (then the headers' sizes count, and the config's
// prediction is checked against them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"

namespace myriad::plan {

struct WeightEntry {
    std::string name;  // as stored, without the multimodal "language_model." prefix
    int64_t bytes = 0;
    ShardKind shard = ShardKind::Replicated;  // a scalar (NVFP4 global scale) is replicated
    bool routed_expert = false;  // mlp.experts.E.*: sliced by TP, or placed whole by EP
    std::string kind;            // "nvfp4", "fp8-block", "int4-group" or the dtype ("BF16")
};

struct WeightInventory {
    std::string source;  // "config.json" or "safetensors headers"
    std::vector<WeightEntry> entries;
    // Headers only: tensors the text model skips (vision tower, MTP layers), expected tensors the
    // headers lack, tensors the config does not predict (kept, replicated).
    int64_t skipped_bytes = 0;
    std::vector<std::string> missing, unexpected;

    int64_t total_bytes() const;
    std::map<std::string, int64_t> bytes_by_kind() const;
};

// Every tensor the forward pass reads, with the dtype the config implies: linears in their
// quantised format (codes, scales and scalars), everything else in torch_dtype (BF16 when
// absent), the router's e_score_correction_bias in F32 (as DeepSeek and Kimi store it).
WeightInventory weights_from_config(const ModelConfig& config);

// The same tensors with the sizes their safetensors headers give. `tensors` are every header
// entry of every shard.
WeightInventory weights_from_headers(const ModelConfig& config,
                                     const std::vector<TensorInfo>& tensors);

// The tensors of a GGUF model (all its splits) as the forward pass reads them: each of our
// tensors with the bytes of its GGUF tensor (a routed expert: its slice of the 3-D expert
// tensor), kind "gguf Q4_K" etc.; kv_b_proj, which myriad rebuilds from attn_k_b and attn_v_b, at
// BF16 size.
WeightInventory weights_from_gguf(const ModelConfig& config, const GgufModel& model);

// Bytes one GPU holds (Layout::rank_bytes). TP layouts (ep == 1) split Rows/Cols tensors, routed
// experts included, in `tp` parts; expert-parallel ones (ep == tp) split the others the same way
// and place ceil(E / ep) whole routed experts per layer on each GPU.
struct GpuWeightBytes {
    int64_t sharded = 0, replicated = 0;
    int64_t total() const { return sharded + replicated; }
};
GpuWeightBytes weight_bytes_per_gpu(const WeightInventory& inventory, const ModelConfig& config,
                                    int tp, int ep);

}  // namespace myriad::plan
