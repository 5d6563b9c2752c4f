// ModelConfig: every config.json field the DeepSeek-V3 forward pass uses, validated at load.
// Accepts model_type deepseek_v3 and kimi_k2, and Kimi-K2.5's multimodal config (model_type
// kimi_k25) whose text model sits in `text_config` (reference.md §1.10).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/quant_config.h"

namespace myriad {

// YaRN parameters from `rope_scaling` (keys `type` or `rope_type`) or transformers' newer
// `rope_parameters` (which also carries rope_theta). reference.md §1.5.
struct RopeScaling {
    bool yarn = false;  // false: plain RoPE, no scaling
    double factor = 1.0;
    int64_t original_max_position_embeddings = 0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double mscale = 1.0;          // absent -> 1.0
    double mscale_all_dim = 0.0;  // absent -> 0.0
    std::optional<double> attention_factor;

    bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
    std::string path;              // the config.json read, for error messages
    std::string model_type;        // of the text model: deepseek_v3 | kimi_k2
    std::string outer_model_type;  // kimi_k25 for the multimodal wrapper, else empty
    bool multimodal = false;       // text_config present: vision tensors exist and are skipped

    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t moe_intermediate_size = 0;
    int64_t num_hidden_layers = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;
    int64_t q_lora_rank = 0;  // 0 when null: q_proj instead of q_a/q_b
    int64_t kv_lora_rank = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t v_head_dim = 0;
    int64_t n_routed_experts = 0;
    int64_t num_experts_per_tok = 0;
    int64_t n_shared_experts = 0;
    int64_t first_k_dense_replace = 0;
    int64_t moe_layer_freq = 1;
    int64_t n_group = 1;
    int64_t topk_group = 1;
    std::string scoring_func = "sigmoid";  // only sigmoid is supported
    std::string topk_method = "noaux_tc";  // noaux_tc
    bool norm_topk_prob = true;
    double routed_scaling_factor = 1.0;
    double rms_norm_eps = 1e-6;
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
    int64_t max_position_embeddings = 0;
    int64_t num_nextn_predict_layers = 0;
    // MTP layers the forward pass loads (--speculative mtp): 0, or num_nextn_predict_layers. Not
    // from config.json: set by whoever loads the model for the MTP drafter.
    int64_t mtp_layers = 0;
    bool tie_word_embeddings = false;
    std::optional<int64_t> bos_token_id;
    std::vector<int64_t> eos_token_ids;
    std::string torch_dtype;                     // informational
    nlohmann::ordered_json quantization_config;  // raw; null when absent
    // Parsed from quantization_config and, by load_model_config, hf_quant_config.json beside it.
    QuantConfig quant;

    int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
    bool is_moe_layer(int64_t layer) const {
        return n_routed_experts > 0 && layer >= first_k_dense_replace &&
               layer % moe_layer_freq == 0;
    }
};

// Reads `<dir>/config.json` (or the file itself if `path` names a .json file; a .gguf file is
// read by gguf_model_config). Every field the forward pass uses is checked for presence, type and
// range; an error names the file and field.
ModelConfig load_model_config(const std::string& path);
// The same from already-parsed JSON; `source` names it in errors.
ModelConfig parse_model_config(const nlohmann::ordered_json& json, const std::string& source);

}  // namespace myriad
