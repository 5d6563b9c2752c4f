// Rotary embedding frequencies with YaRN, and the attention softmax scale (reference.md §1.5).
#pragma once

#include <vector>

#include "model/model_config.h"

namespace myriad {

struct RopeTable {
    std::vector<float> inv_freq;    // [qk_rope_head_dim / 2]
    float attention_factor = 1.0f;  // multiplies cos and sin
};

// 0.1 * m * ln(s) + 1 for s > 1, else 1.
double yarn_get_mscale(double scale, double mscale);
// inv_freq and attention factor as transformers computes them (float32 arithmetic).
RopeTable compute_rope_table(const ModelConfig& config);
// qk_head_dim^-0.5, times yarn_get_mscale(factor, mscale_all_dim)^2 under YaRN when
// mscale_all_dim is nonzero.
float compute_softmax_scale(const ModelConfig& config);

}  // namespace myriad
