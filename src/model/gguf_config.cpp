#include "model/gguf_config.h"

#include <cmath>

#include "model/config_bounds.h"
#include "util/error.h"

namespace myriad {

namespace {

constexpr std::string_view kArch = "deepseek2";

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE values.
constexpr int64_t kGatingSoftmax = 1;
constexpr int64_t kGatingSigmoid = 2;

}  // namespace

ModelConfig gguf_model_config(const GgufModel& m) {
    const std::string& file = m.path();
    const std::string_view arch = m.string("general.architecture");
    if (arch != kArch)
        bad_input(
            "{}: metadata general.architecture is \"{}\"; myriad runs llama.cpp's deepseek2 "
            "architecture (DeepSeek-V3/R1, Kimi-K2)",
            file, arch.substr(0, 64));
    const std::string p = std::string(kArch) + ".";
    auto key = [&](std::string_view k) { return p + std::string(k); };
    auto positive = [&](std::string_view k) {
        const int64_t v = m.integer(key(k));
        if (v <= 0) bad_input("{}: metadata {} is {}, expected a positive number", file, key(k), v);
        return v;
    };
    auto opt_int = [&](std::string_view k, int64_t fallback) {
        return m.opt_integer(key(k)).value_or(fallback);
    };

    ModelConfig c;
    c.path = file;
    const std::string_view pre = m.opt_string("tokenizer.ggml.pre").value_or("");
    c.model_type = pre == "kimi-k2" ? "kimi_k2" : "deepseek_v3";
    c.torch_dtype = "gguf";
    c.num_hidden_layers = positive("block_count") - opt_int("nextn_predict_layers", 0);
    if (c.num_hidden_layers <= 0)
        bad_input("{}: metadata {} leaves no decoder layers", file, key("nextn_predict_layers"));
    c.hidden_size = positive("embedding_length");
    c.intermediate_size = positive("feed_forward_length");
    c.moe_intermediate_size = positive("expert_feed_forward_length");
    c.num_attention_heads = positive("attention.head_count");
    // MLA files describe attention as MQA over the latent (head_count_kv 1); the forward pass
    // decompresses to one key/value head per query head.
    c.num_key_value_heads = c.num_attention_heads;
    c.q_lora_rank = opt_int("attention.q_lora_rank", 0);
    c.kv_lora_rank = positive("attention.kv_lora_rank");
    c.qk_rope_head_dim = positive("rope.dimension_count");
    // Newer converts (split attn_k_b / attn_v_b) keep the per-head sizes in *_mla; older ones in
    // key_length / value_length.
    const bool mla_keys = m.find(key("attention.key_length_mla")) != nullptr;
    const int64_t qk = positive(mla_keys ? "attention.key_length_mla" : "attention.key_length");
    c.v_head_dim = positive(mla_keys ? "attention.value_length_mla" : "attention.value_length");
    c.qk_nope_head_dim = qk - c.qk_rope_head_dim;
    if (c.qk_nope_head_dim <= 0)
        bad_input("{}: metadata {} = {} leaves no room for the rope part of {}", file,
                  key(mla_keys ? "attention.key_length_mla" : "attention.key_length"), qk,
                  c.qk_rope_head_dim);
    if (c.qk_rope_head_dim % 2 != 0)
        bad_input("{}: metadata {} must be even, got {}", file, key("rope.dimension_count"),
                  c.qk_rope_head_dim);
    c.n_routed_experts = positive("expert_count");
    c.num_experts_per_tok = positive("expert_used_count");
    c.n_shared_experts = opt_int("expert_shared_count", 0);
    c.first_k_dense_replace = opt_int("leading_dense_block_count", 0);
    c.n_group = opt_int("expert_group_count", 1);
    c.topk_group = opt_int("expert_group_used_count", 1);
    c.routed_scaling_factor = m.opt_number(key("expert_weights_scale")).value_or(1.0);
    c.norm_topk_prob = m.opt_bool(key("expert_weights_norm")).value_or(false);
    // llama.cpp reads a missing expert_gating_func as softmax (DeepSeek-V2 files).
    const int64_t gating = opt_int("expert_gating_func", kGatingSoftmax);
    if (gating != kGatingSigmoid)
        bad_input(
            "{}: metadata {} is {} ({}); myriad needs sigmoid gating (2) with the router bias "
            "exp_probs_b, as DeepSeek-V3 routes",
            file, key("expert_gating_func"), gating, gating == kGatingSoftmax ? "softmax" : "?");
    c.rms_norm_eps = m.opt_number(key("attention.layer_norm_rms_epsilon")).value_or(1e-6);
    c.rope_theta = m.opt_number(key("rope.freq_base")).value_or(10000.0);
    c.max_position_embeddings = opt_int("context_length", 4096);

    if (auto type = m.opt_string(key("rope.scaling.type")); type && *type == "yarn") {
        RopeScaling& s = c.rope_scaling;
        s.yarn = true;
        s.factor = m.opt_number(key("rope.scaling.factor")).value_or(1.0);
        s.original_max_position_embeddings = opt_int("rope.scaling.original_context_length", 0);
        s.beta_fast = m.opt_number(key("rope.scaling.yarn_beta_fast")).value_or(32.0);
        s.beta_slow = m.opt_number(key("rope.scaling.yarn_beta_slow")).value_or(1.0);
        // The converter writes yarn_log_multiplier = 0.1 * mscale_all_dim and drops mscale;
        // every published DeepSeek config has mscale == mscale_all_dim, so that is assumed.
        s.mscale_all_dim =
            m.opt_number(key("rope.scaling.yarn_log_multiplier")).value_or(0.0) / 0.1;
        s.mscale = s.mscale_all_dim > 0.0 ? s.mscale_all_dim : 1.0;
        if (!(s.factor > 0.0) || s.original_max_position_embeddings <= 0)
            bad_input("{}: YaRN needs metadata {} > 0 and {} > 0", file, key("rope.scaling.factor"),
                      key("rope.scaling.original_context_length"));
    } else if (type && *type != "none") {
        bad_input("{}: metadata {} is \"{}\"; myriad supports yarn and none", file,
                  key("rope.scaling.type"), type->substr(0, 64));
    }

    const GgufTensorInfo* embd = m.tensor("token_embd.weight");
    if (!embd || embd->dims.size() != 2)
        bad_input("{}: tensor token_embd.weight is missing or not a matrix", file);
    if (embd->dims[0] != c.hidden_size)
        bad_input("{}: tensor token_embd.weight has rows of {}, but {} is {}", file, embd->dims[0],
                  key("embedding_length"), c.hidden_size);
    c.vocab_size = embd->dims[1];
    if (auto bos = m.opt_integer("tokenizer.ggml.bos_token_id")) c.bos_token_id = *bos;
    if (auto eos = m.opt_integer("tokenizer.ggml.eos_token_id")) c.eos_token_ids = {*eos};

    auto at_most = [&](std::string_view what, int64_t v, std::string_view than, int64_t limit) {
        if (v > limit)
            bad_input("{}: metadata {} = {} is more than {} = {}", file, key(what), v, key(than),
                      limit);
    };
    at_most("expert_used_count", c.num_experts_per_tok, "expert_count", c.n_routed_experts);
    at_most("expert_group_used_count", c.topk_group, "expert_group_count", c.n_group);
    if (c.n_group < 1 || c.topk_group < 1 || c.n_routed_experts % c.n_group != 0)
        bad_input("{}: metadata {} = {} does not divide {} = {}", file, key("expert_group_count"),
                  c.n_group, key("expert_count"), c.n_routed_experts);
    if (c.n_group > 1 && c.n_routed_experts / c.n_group < 2)
        bad_input("{}: metadata {} = {} leaves fewer than 2 experts per group", file,
                  key("expert_group_count"), c.n_group);
    if (c.first_k_dense_replace < 0 || c.n_shared_experts < 0 || c.q_lora_rank < 0)
        bad_input("{}: a negative count in {}, {} or {}", file, key("leading_dense_block_count"),
                  key("expert_shared_count"), key("attention.q_lora_rank"));
    if (!(c.routed_scaling_factor > 0.0) || !(c.rms_norm_eps > 0.0) || !(c.rope_theta > 0.0))
        bad_input("{}: metadata {}, {} and {} must be positive", file, key("expert_weights_scale"),
                  key("attention.layer_norm_rms_epsilon"), key("rope.freq_base"));
    const ConfigFieldNames names{
        "metadata " + key("block_count"),        "metadata " + key("expert_count"),
        "tensor token_embd.weight's vocabulary", "metadata " + key("embedding_length"),
        "metadata tokenizer.ggml.bos_token_id",  "metadata tokenizer.ggml.eos_token_id",
        "metadata " + key("rope.freq_base"),
    };
    check_config_values(c, names, file);
    uint64_t bytes = 0;
    for (const auto& f : m.files()) bytes += f->size();
    check_config_fits(c, bytes, names, file);
    return c;
}

}  // namespace myriad
