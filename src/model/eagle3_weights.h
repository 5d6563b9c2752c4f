// Eagle3Weights: an EAGLE3 draft's tensors (model/eagle3_config.h), read in place from the mapped
// safetensors files of the draft folder (F32, BF16 or F16; converted a row at a time when used):
// fc, midlayer.* (input_layernorm, hidden_norm, self_attn q/k/v/o_proj, post_attention_layernorm,
// mlp gate/up/down_proj), norm, lm_head, optionally embed_tokens (else the target's embedding is
// shared) and d2t, the draft-to-target vocabulary map (target id = draft id + d2t[draft id]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/checkpoint.h"
#include "model/eagle3_config.h"
#include "util/dtype.h"

namespace myriad {

// A [rows, cols] matrix in a mapped file; row(i) converts one row to float.
struct HostMatrix {
    const uint8_t* data = nullptr;
    DType dtype = DType::F32;
    int64_t rows = 0, cols = 0;
    void row(int64_t i, float* out) const;
    std::vector<float> all() const;  // every row, [rows * cols] (small tensors: norms)
};

struct Eagle3Weights {
    HostMatrix fc;  // [hidden, n_aux * target_hidden]
    std::vector<float> input_norm, hidden_norm, post_attention_norm, final_norm;  // [hidden]
    HostMatrix q, k, v;   // [heads * head_dim | kv_heads * head_dim, 2 * hidden]
    HostMatrix o;         // [hidden, heads * head_dim]
    HostMatrix gate, up;  // [intermediate, hidden]
    HostMatrix down;      // [hidden, intermediate]
    HostMatrix lm_head;   // [draft_vocab, hidden]
    HostMatrix embed;     // [vocab, hidden]: the draft's own, or the target's
    bool own_embed = false;
    std::vector<int32_t> draft_to_target;  // [draft_vocab]: each draft id's target id
    int64_t num_aux = 0;                   // hidden states fc concatenates (fc's columns / width)
};

// The tensors of `draft` (the folder's checkpoint) checked against `config`; without
// embed_tokens, `target_embed` (the target's model.embed_tokens.weight, [vocab, hidden]) is
// shared, null: bad input. Every error names the file and the tensor.
Eagle3Weights load_eagle3_weights(const Eagle3Config& config, const Checkpoint& draft,
                                  const TensorView* target_embed);

}  // namespace myriad
