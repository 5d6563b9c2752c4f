#include "model/tensor_layout.h"

#include <fmt/format.h>

namespace myriad {

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
    std::vector<ExpectedTensor> out;
    int64_t expert = -1;  // set while the routed experts' matrices are added
    auto add = [&](std::string name, std::vector<int64_t> shape, ShardKind shard) {
        out.push_back({std::move(name), std::move(shape), shard, expert});
    };
    const int64_t hidden = c.hidden_size, heads = c.num_attention_heads;
    add("model.embed_tokens.weight", {c.vocab_size, hidden}, ShardKind::Rows);
    // The decoder layers, then the MTP layers that are loaded (each a decoder layer after its
    // own norms and eh_proj; its embedding and head are the model's: reference.md §1.9).
    for (int64_t l = 0; l < c.num_hidden_layers + c.mtp_layers; ++l) {
        const std::string p = fmt::format("model.layers.{}.", l);
        if (l >= c.num_hidden_layers) {
            add(p + "enorm.weight", {hidden}, ShardKind::Replicated);
            add(p + "hnorm.weight", {hidden}, ShardKind::Replicated);
            add(p + "eh_proj.weight", {hidden, 2 * hidden}, ShardKind::Replicated);
            add(p + "shared_head.norm.weight", {hidden}, ShardKind::Replicated);
        }
        add(p + "input_layernorm.weight", {hidden}, ShardKind::Replicated);
        add(p + "post_attention_layernorm.weight", {hidden}, ShardKind::Replicated);
        const std::string a = p + "self_attn.";
        if (c.q_lora_rank > 0) {
            add(a + "q_a_proj.weight", {c.q_lora_rank, hidden}, ShardKind::Replicated);
            add(a + "q_a_layernorm.weight", {c.q_lora_rank}, ShardKind::Replicated);
            add(a + "q_b_proj.weight", {heads * c.qk_head_dim(), c.q_lora_rank}, ShardKind::Rows);
        } else {
            add(a + "q_proj.weight", {heads * c.qk_head_dim(), hidden}, ShardKind::Rows);
        }
        add(a + "kv_a_proj_with_mqa.weight", {c.kv_lora_rank + c.qk_rope_head_dim, hidden},
            ShardKind::Replicated);
        add(a + "kv_a_layernorm.weight", {c.kv_lora_rank}, ShardKind::Replicated);
        add(a + "kv_b_proj.weight", {heads * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank},
            ShardKind::Rows);
        add(a + "o_proj.weight", {hidden, heads * c.v_head_dim}, ShardKind::Cols);
        const std::string m = p + "mlp.";
        auto mlp = [&](const std::string& q, int64_t inter) {
            add(q + "gate_proj.weight", {inter, hidden}, ShardKind::Rows);
            add(q + "up_proj.weight", {inter, hidden}, ShardKind::Rows);
            add(q + "down_proj.weight", {hidden, inter}, ShardKind::Cols);
        };
        if (!c.is_moe_layer(l)) {
            mlp(m, c.intermediate_size);
            continue;
        }
        add(m + "gate.weight", {c.n_routed_experts, hidden}, ShardKind::Replicated);
        add(m + "gate.e_score_correction_bias", {c.n_routed_experts}, ShardKind::Replicated);
        for (expert = 0; expert < c.n_routed_experts; ++expert)
            mlp(fmt::format("{}experts.{}.", m, expert), c.moe_intermediate_size);
        expert = -1;
        if (c.n_shared_experts > 0)
            mlp(m + "shared_experts.", c.moe_intermediate_size * c.n_shared_experts);
    }
    add("model.norm.weight", {hidden}, ShardKind::Replicated);
    add("lm_head.weight", {c.vocab_size, hidden}, ShardKind::Rows);
    return out;
}

TensorShard tensor_shard(const ModelConfig& c, const ExpectedTensor& t, const Layout& layout) {
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const int64_t cols = t.shape.size() == 2 ? t.shape[1] : t.shape[0];
    return layout.shard(t.shard, rows, cols, t.expert, c.n_routed_experts);
}

bool is_ignored_tensor(const ModelConfig& c, std::string_view name) {
    if (name.starts_with("vision_tower.") || name.starts_with("mm_projector.")) return true;
    // Multi-token-prediction layers are stored after the last decoder layer. Loaded ones
    // (--speculative mtp) still leave out their copies of the embedding and the head.
    for (int64_t i = 0; i < c.num_nextn_predict_layers; ++i) {
        const std::string p = fmt::format("model.layers.{}.", c.num_hidden_layers + i);
        if (!name.starts_with(p)) continue;
        if (i >= c.mtp_layers) return true;
        const std::string_view rest = name.substr(p.size());
        if (rest.starts_with("embed_tokens.") || rest.starts_with("shared_head.head.")) return true;
    }
    return false;
}

}  // namespace myriad
