#include "model/synthetic_model.h"

#include <cmath>

#include "model/linear_format.h"
#include "ops/synthetic_values.h"
#include "util/error.h"

namespace myriad {

namespace {

// The fields of the published config.json files that the forward pass reads.
nlohmann::ordered_json moonlight_json() {
    return {{"model_type", "deepseek_v3"},
            {"vocab_size", 129280},
            {"hidden_size", 2048},
            {"intermediate_size", 11264},
            {"moe_intermediate_size", 1408},
            {"num_hidden_layers", 27},
            {"num_attention_heads", 16},
            {"num_key_value_heads", 16},
            {"q_lora_rank", nullptr},
            {"kv_lora_rank", 512},
            {"qk_nope_head_dim", 128},
            {"qk_rope_head_dim", 64},
            {"v_head_dim", 128},
            {"n_routed_experts", 64},
            {"num_experts_per_tok", 6},
            {"n_shared_experts", 2},
            {"first_k_dense_replace", 1},
            {"moe_layer_freq", 1},
            {"n_group", 1},
            {"topk_group", 1},
            {"scoring_func", "sigmoid"},
            {"topk_method", "noaux_tc"},
            {"norm_topk_prob", true},
            {"routed_scaling_factor", 2.446},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 50000.0},
            {"rope_scaling", nullptr},
            {"max_position_embeddings", 8192},
            {"tie_word_embeddings", false}};
}

nlohmann::ordered_json kimi_k2_json() {
    return {{"model_type", "kimi_k2"},
            {"vocab_size", 163840},
            {"hidden_size", 7168},
            {"intermediate_size", 18432},
            {"moe_intermediate_size", 2048},
            {"num_hidden_layers", 61},
            {"num_attention_heads", 64},
            {"num_key_value_heads", 64},
            {"q_lora_rank", 1536},
            {"kv_lora_rank", 512},
            {"qk_nope_head_dim", 128},
            {"qk_rope_head_dim", 64},
            {"v_head_dim", 128},
            {"n_routed_experts", 384},
            {"num_experts_per_tok", 8},
            {"n_shared_experts", 1},
            {"first_k_dense_replace", 1},
            {"moe_layer_freq", 1},
            {"n_group", 1},
            {"topk_group", 1},
            {"scoring_func", "sigmoid"},
            {"topk_method", "noaux_tc"},
            {"norm_topk_prob", true},
            {"routed_scaling_factor", 2.827},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 50000.0},
            {"rope_scaling",
             {{"type", "yarn"},
              {"factor", 32.0},
              {"original_max_position_embeddings", 4096},
              {"beta_fast", 1.0},
              {"beta_slow", 1.0},
              {"mscale", 1.0},
              {"mscale_all_dim", 1.0}}},
            {"max_position_embeddings", 131072},
            {"tie_word_embeddings", false}};
}

uint64_t name_hash(std::string_view s) {  // FNV-1a
    uint64_t h = 1469598103934665603ull;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    return h;
}

float nearest_pow2(double x) {
    return static_cast<float>(std::exp2(std::round(std::log2(x))));
}

}  // namespace

std::string_view random_shape_names() {
    return "moonlight, kimi-k2";
}

ModelConfig random_model_config(std::string_view shape, int64_t layers, std::string_view format) {
    nlohmann::ordered_json j;
    if (shape == "moonlight")
        j = moonlight_json();
    else if (shape == "kimi-k2")
        j = kimi_k2_json();
    else
        bad_input("--random {}: unknown shape; use one of {}", shape, random_shape_names());
    if (layers < 0) bad_input("--layers {}: must be at least 1", layers);
    if (layers > 0) {
        if (layers > j["num_hidden_layers"].get<int64_t>())
            bad_input("--layers {}: {} has {} layers", layers, shape,
                      j["num_hidden_layers"].get<int64_t>());
        j["num_hidden_layers"] = layers;
    }
    ModelConfig c = parse_model_config(j, std::string("--random ") + std::string(shape));
    if (format == "bf16") {
        c.quant = {};
    } else if (format == "fp8") {
        c.quant.method = QuantMethod::Fp8Block;
        c.quant.block_rows = c.quant.block_cols = 128;
        c.quant.source = "--format fp8";
    } else if (format == "nvfp4") {
        c.quant.method = QuantMethod::ModelOptNvfp4;
        c.quant.group_size = 16;
        c.quant.ignore = {"lm_head", "*.self_attn*", "*.shared_experts*", "*.layers.0.mlp*",
                          "*mlp.gate"};
        // Dense layers (first_k_dense_replace) stay BF16 whatever their number.
        for (int64_t l = 1; l < c.first_k_dense_replace; ++l)
            c.quant.ignore.push_back("*.layers." + std::to_string(l) + ".mlp*");
        c.quant.source = "--format nvfp4";
    } else {
        bad_input("--format {}: use bf16, fp8 or nvfp4", format);
    }
    return c;
}

WeightSource synthetic_source(const ExpectedTensor& t, WeightFormat format,
                              const ModelConfig& config, uint64_t seed) {
    WeightSource src;
    const bool matrix = t.shape.size() == 2;
    src.src_rows = matrix ? t.shape[0] : 1;
    src.src_cols = matrix ? t.shape[1] : t.shape[0];
    src.row_end = src.src_rows;
    src.col_end = src.src_cols;
    src.format = format;
    src.synthetic.seed = synth::mix(seed, name_hash(t.name)) | 1;
    const std::string_view name = t.name;
    // Unit-size outputs from unit-size inputs: RMS of each weight 1/sqrt(inputs).
    const double rms = 1.0 / std::sqrt(static_cast<double>(src.src_cols));
    if (name == "model.embed_tokens.weight") {
        src.synthetic.amplitude = 1.0f;
    } else if (!matrix && name.ends_with("norm.weight")) {
        src.synthetic.center = 1.0f;
        src.synthetic.amplitude = 0.125f;
    } else if (!matrix) {  // the router's score-correction bias
        src.synthetic.amplitude = 1.0f / 32;
    } else {
        src.synthetic.amplitude = nearest_pow2(rms * std::sqrt(3.0));  // uniform: RMS a/sqrt(3)
    }
    QuantizedData& q = src.quant;
    const int64_t r = src.src_rows, c = src.src_cols;
    switch (format) {
        case WeightFormat::Dense:
            src.dtype = DType::BF16;
            break;
        case WeightFormat::Fp8Block:
            src.dtype = DType::F8_E4M3;
            src.synthetic.amplitude = nearest_pow2(rms / synth::kFp8Rms);
            q.block_rows = config.quant.block_rows;
            q.block_cols = config.quant.block_cols;
            q.code_row_bytes = c;
            q.scale_dtype = DType::F32;
            q.scale_row_stride = (c + q.block_cols - 1) / q.block_cols;
            q.bytes = static_cast<size_t>(r * c + (r + q.block_rows - 1) / q.block_rows *
                                                      q.scale_row_stride * 4);
            break;
        case WeightFormat::Nvfp4:
            MYRIAD_CHECK(c % 16 == 0, "NVFP4 tensor {} of {} inputs", t.name, c);
            src.dtype = DType::U8;
            q.block_rows = 1;
            q.block_cols = 16;
            q.code_row_bytes = c / 2;
            q.scale_dtype = DType::F8_E4M3;
            q.scale_row_stride = c / 16;
            q.global_scale = nearest_pow2(rms / synth::kNvfp4Rms);
            q.input_scale = 1.0f;
            q.bytes = static_cast<size_t>(r * c / 2 + r * c / 16);
            break;
        case WeightFormat::Int4Group:  // compressed-tensors pack-quantized, BF16 group scales
            MYRIAD_CHECK(c % config.quant.group_size == 0 && c % 8 == 0,
                         "INT4 tensor {} of {} inputs (groups of {})", t.name, c,
                         config.quant.group_size);
            src.dtype = DType::I32;
            src.synthetic.amplitude = nearest_pow2(rms / synth::kInt4Rms);
            q.block_rows = 1;
            q.block_cols = config.quant.group_size;
            q.code_row_bytes = c / 2;
            q.scale_dtype = DType::BF16;
            q.scale_row_stride = c / config.quant.group_size;
            q.bytes = static_cast<size_t>(r * c / 2 + r * q.scale_row_stride * 2);
            break;
        default:
            bad_input("--random: {} weights cannot be generated; use bf16, fp8, nvfp4 or int4",
                      weight_format_name(format));
    }
    return src;
}

}  // namespace myriad
