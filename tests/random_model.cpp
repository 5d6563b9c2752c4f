#include "random_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "format/safetensors_writer.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"

namespace myriad::testing {

nlohmann::ordered_json small_config() {
    return nlohmann::ordered_json::parse(R"({
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
        "moe_intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 4, "q_lora_rank": 48, "kv_lora_rank": 32,
        "qk_nope_head_dim": 16, "qk_rope_head_dim": 16, "v_head_dim": 16,
        "n_routed_experts": 8, "num_experts_per_tok": 3, "n_shared_experts": 1,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 4, "topk_group": 2,
        "scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": true,
        "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "rope_scaling": {"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                         "mscale_all_dim": 1.0},
        "max_position_embeddings": 163840, "num_nextn_predict_layers": 0,
        "tie_word_embeddings": false, "bos_token_id": 0, "eos_token_id": 1
    })");
}

void write_random_model(const std::string& dir, const nlohmann::ordered_json& json, uint64_t seed,
                        const std::map<std::string, float>& scales) {
    {
        std::ofstream out(dir + "/config.json");
        out << json.dump(2);
    }
    ModelConfig c = parse_model_config(json, dir + "/config.json");
    c.mtp_layers = c.num_nextn_predict_layers;  // its MTP layers too (reference.md §1.9)
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 0.1f);
    std::vector<TensorToWrite> tensors;
    for (const auto& t : expected_tensors(c)) {
        TensorToWrite w;
        w.name = t.name;
        w.shape = t.shape;
        int64_t n = 1;
        for (int64_t d : t.shape) n *= d;
        const bool bias = t.name.ends_with("e_score_correction_bias");
        const bool norm = t.name.ends_with("norm.weight");
        const bool embed = t.name == "model.embed_tokens.weight";
        w.dtype = bias ? DType::F32 : DType::BF16;
        w.bytes.resize(static_cast<size_t>(n) * dtype_size(w.dtype));
        float std = embed ? 1.0f : 1.0f / std::sqrt(static_cast<float>(t.shape.back()));
        for (const auto& [suffix, scale] : scales)
            if (t.name.ends_with(suffix)) std *= scale;
        for (int64_t i = 0; i < n; ++i) {
            float v = bias ? uniform(rng) : norm ? 1.0f + 0.1f * normal(rng) : std * normal(rng);
            if (bias) {
                std::memcpy(w.bytes.data() + i * 4, &v, 4);
            } else {
                uint16_t b = f32_to_bf16(v);
                std::memcpy(w.bytes.data() + i * 2, &b, 2);
            }
        }
        tensors.push_back(std::move(w));
    }
    write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
}

}  // namespace myriad::testing
