// KvCache: the paged MLA latent cache of one rank — per layer, blocks of `block_size` tokens,
// each token holding kv_lora_rank latent values and qk_rope_head_dim rotated key values. MLA's
// latent is shared by all heads, so every tensor-parallel rank holds the whole cache.
#pragma once

#include <memory>
#include <vector>

#include "model/model_config.h"
#include "ops/ops.h"

namespace myriad {

class KvCache {
public:
    KvCache(const ModelConfig& config, Ops& ops, int64_t num_blocks, int64_t block_size);

    int64_t num_blocks() const { return num_blocks_; }
    int64_t block_size() const { return block_size_; }
    const KvLayerView& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }
    // Bytes per token across all layers.
    int64_t bytes_per_token() const;

private:
    int64_t num_blocks_, block_size_;
    std::vector<KvLayerView> layers_;
    std::vector<std::shared_ptr<void>> storage_;
};

}  // namespace myriad
