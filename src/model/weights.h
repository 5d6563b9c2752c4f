// The weights of one tensor-parallel rank, loaded from a checkpoint and sharded at load:
// attention heads, expert and dense intermediate dimensions, and the vocabulary.
#pragma once

#include <string>
#include <vector>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "ops/ops.h"
#include "parallel/layout.h"

namespace myriad {

struct AttentionWeights {
    Weight q_a, q_a_norm, q_b;  // q_lora_rank set
    Weight q;                   // q_lora_rank null
    Weight kv_a, kv_a_norm, kv_b, o;
};

struct LayerWeights {
    Weight input_norm, post_attention_norm;
    AttentionWeights attn;
    bool moe = false;
    MlpWeights dense;                 // dense layers
    Weight router, router_bias;       // MoE layers
    std::vector<MlpWeights> experts;  // this rank's slice of every routed expert
    MlpWeights shared;                // shared experts as one MLP (empty when none)
};

// One multi-token-prediction layer (reference.md §1.9): the norms of the next token's embedding
// and of the target's hidden state, eh_proj as its two column halves (the embedding's, the
// hidden state's: eh_proj of the concatenation is their sum), a decoder layer, and the norm
// before the shared head (the model's lm_head; its embedding is the model's too).
struct MtpWeights {
    Weight enorm, hnorm, eh_proj_e, eh_proj_h, head_norm;
    LayerWeights layer;
};

struct ModelWeights {
    Weight embed;  // rows [vocab_begin, vocab_begin + rows) of the vocabulary
    int64_t vocab_begin = 0;
    std::vector<LayerWeights> layers;
    std::vector<MtpWeights> mtp;  // config.mtp_layers of them
    Weight final_norm;
    Weight lm_head;    // same vocabulary rows as embed
    size_t bytes = 0;  // backend bytes held by this rank
};

// The checkpoint's prefix of the text model's tensors: "" or "language_model." (Kimi-K2.5).
std::string text_model_prefix(const ModelConfig& config, const Checkpoint& checkpoint);

// Checks every tensor the forward pass reads (presence, shape, dtype; quantised linears in the
// format the quantisation config decides, the layout's shards possible: check_layout) without
// loading any; bad input names the file and tensor. Logs once when vision or MTP tensors are
// skipped.
void validate_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint,
                         const Layout& layout = {});

class ShardLoad;

// Where a rank's bytes come from: straight from the mapping (load null), or through the
// process's shard reader as consumer `consumer` (model/shard_load.h).
struct WeightFeed {
    ShardLoad* load = nullptr;
    int consumer = 0;
};

// Loads rank layout.rank(): each rank reads only its slices (a routed expert another rank holds
// under expert parallelism is left empty: gate.rows == 0).
ModelWeights load_weights(const ModelConfig& config, const Checkpoint& checkpoint, Ops& ops,
                          const Layout& layout, const WeightFeed& feed = {});

// A weight rank layout.rank() loads and the source it reads (safetensors checkpoints).
struct PlannedWeight {
    std::string name;
    WeightSource source;
};
// Every weight the rank holds, in the forward pass's order (routed experts of other ranks left
// out), without loading any.
std::vector<PlannedWeight> planned_weights(const ModelConfig& config, const Checkpoint& checkpoint,
                                           const Layout& layout);

}  // namespace myriad
