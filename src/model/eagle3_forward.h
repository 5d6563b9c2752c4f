// The EAGLE3 draft's forward pass on the host (model/eagle3_weights.h holds its tensors). A row at
// position p pairs the token at p + 1 with a hidden state: the target's aux hidden states at p
// (n_aux x target_hidden wide, fused by fc) or, for a chained draft, the draft's own output row
// (hidden wide). Then one Llama decoder layer:
//   g = fc(aux) | own;  a = [input_layernorm(embed(token)) ; hidden_norm(g)]   (2 x hidden)
//   r = g (hidden_norm(g) with norm_before_residual);  r += o_proj(attention(q, k, v of a))
//   out = r + mlp(post_attention_layernorm(r))      (the output hidden state, chained onward)
//   logits = lm_head(norm(out)) over the draft vocabulary (d2t maps an id to the target's)
// Attention is causal over the sequence's own cache (Eagle3Cache), rotary (rotate-half pairs)
// on q and k, grouped-query heads. Plain C++ over host vectors: the layer is small next to the
// target, and the CUDA backend does not run it yet.
#pragma once

#include <cstdint>
#include <vector>

#include "model/eagle3_config.h"
#include "model/eagle3_weights.h"

namespace myriad {

// One sequence's draft KV cache: positions [start, length), rows of kv_heads * head_dim (start
// is past 0 where the positions before it were never computed by the draft: a prompt prefix from
// the prefix cache; attention then begins at start).
struct Eagle3Cache {
    std::vector<float> k, v;
    int64_t start = 0, length = 0;
};

class Eagle3Draft {
  public:
    Eagle3Draft(Eagle3Config config, Eagle3Weights weights);
    const Eagle3Config& config() const { return config_; }
    const Eagle3Weights& weights() const { return weights_; }
    // Width of a target row the draft takes (num_aux x target_hidden_size).
    int64_t aux_width() const { return weights_.num_aux * config_.target_hidden_size; }

    // Rows at positions first, first + 1, ... of one sequence: `tokens` [n] (target ids),
    // `hidden` [n, aux_width()] when `fused`, else [n, hidden_size]. The cache (start <= first <=
    // length) is cut to `first`
    // (what was drafted past it is forgotten) and the rows' keys and values appended. Writes each
    // row's output hidden state to `out` ([n, hidden_size]; null: not wanted) and the draft-vocab
    // logits of rows [logits_from, n) to `logits` ([n - logits_from, draft_vocab_size]).
    void forward(Eagle3Cache& cache, int64_t first, const std::vector<int32_t>& tokens,
                 const float* hidden, bool fused, float* out, int64_t logits_from,
                 float* logits) const;

    // The target id of draft-vocab id `d`.
    int32_t to_target(int64_t d) const { return weights_.draft_to_target[static_cast<size_t>(d)]; }

  private:
    Eagle3Config config_;
    Eagle3Weights weights_;
    Eagle3RopeTable rope_;
};

}  // namespace myriad
