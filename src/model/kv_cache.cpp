#include "model/kv_cache.h"

#include "util/error.h"

namespace myriad {

KvCache::KvCache(const ModelConfig& c, Ops& ops, int64_t num_blocks, int64_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
    MYRIAD_CHECK(num_blocks > 0 && block_size > 0, "KV cache of {} blocks of {} tokens",
                 num_blocks, block_size);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        KvLayerView v;
        v.block_size = block_size;
        v.latent_dim = c.kv_lora_rank;
        v.rope_dim = c.qk_rope_head_dim;
        v.data = Tensor(nullptr, DType::F32, {num_blocks, block_size, v.latent_dim + v.rope_dim});
        storage_.push_back(ops.allocate(v.data));
        layers_.push_back(v);
    }
}

int64_t KvCache::bytes_per_token() const {
    int64_t total = 0;
    for (const auto& l : layers_) total += (l.latent_dim + l.rope_dim) * dtype_size(l.data.dtype);
    return total;
}

}  // namespace myriad
