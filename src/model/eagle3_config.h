// Eagle3Config: an EAGLE3 draft checkpoint's config.json, as the community publishes drafts for
// Kimi-K2.5 and DeepSeek-V3 (LlamaForCausalLMEagle3: one Llama decoder layer whose attention reads
// [input_layernorm(embedding) ; hidden_norm(h)], fed by fc over the target's aux hidden states).
// Every field the draft forward needs, validated with the file and field in each error.
//
// eagle_aux_hidden_state_layer_ids (top level, or inside eagle_config) counts as vLLM does: id j
// is the residual stream entering target layer j, i.e. layer j - 1's output (0: the embedding).
// Absent, the default is vLLM's (2, L/2, L-3) for a target of L layers. (SGLang reads a list
// starting at 1 as "outputs of" layers; myriad takes the ids as vLLM does, always.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace myriad {

enum class Eagle3Rope : uint8_t { Default, Llama3, Yarn };

struct Eagle3Config {
    std::string path;  // the draft folder
    std::string file;  // its config.json, for messages
    int64_t hidden_size = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;
    int64_t head_dim = 0;  // default hidden_size / num_attention_heads
    int64_t intermediate_size = 0;
    double rms_norm_eps = 1e-6;
    int64_t vocab_size = 0;          // the target's vocabulary, as the draft declares it
    int64_t draft_vocab_size = 0;    // lm_head's rows (default vocab_size); d2t maps them
    int64_t target_hidden_size = 0;  // each aux hidden state's width (default hidden_size)
    // vLLM's norm_before_residual: the residual of the first sub-layer is hidden_norm(h), not h.
    bool norm_before_residual = false;
    double rope_theta = 10000.0;
    Eagle3Rope rope = Eagle3Rope::Default;
    double rope_factor = 1.0;
    // llama3: low/high_freq_factor; yarn: beta_fast/slow, mscale, mscale_all_dim, attention_factor
    double low_freq_factor = 1.0, high_freq_factor = 4.0;
    double beta_fast = 32.0, beta_slow = 1.0;
    double mscale = 0.0, mscale_all_dim = 0.0, attention_factor = 0.0;  // 0: not given
    int64_t original_max_position_embeddings = 0;
    std::vector<int64_t> aux_layer_ids;  // as given; empty: the default
};

// Reads `dir`/config.json; bad input names the file and the field (missing, wrong type, out of
// range, an architecture or activation other than EAGLE3's Llama layer).
Eagle3Config read_eagle3_config(const std::string& dir);

// The target layers whose inputs the draft takes, in fc's order: the config's ids or vLLM's
// default for `target_layers`; bad input when one is outside [0, target_layers).
std::vector<int64_t> eagle3_aux_layers(const Eagle3Config& config, int64_t target_layers);

// Bad input naming the draft's config.json when it does not fit `target` (vocabulary, hidden
// width).
void check_eagle3_target(const Eagle3Config& config, const ModelConfig& target);

// The rotary table of the draft's attention (rotate-half pairs, Llama's): head_dim / 2
// frequencies and the factor that multiplies cos and sin (YaRN's attention factor, else 1).
struct Eagle3RopeTable {
    std::vector<float> inv_freq;
    float attention_factor = 1.0f;
};
Eagle3RopeTable eagle3_rope_table(const Eagle3Config& config);

}  // namespace myriad
