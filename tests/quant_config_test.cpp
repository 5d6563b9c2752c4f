// Quantisation configs: the three forms of reference.md §2 parsed into which linears are
// quantised; ignore patterns as vLLM reads them; malformed configs are bad input naming the field.
#include <gtest/gtest.h>

#include <string>

#include "format/quant_config.h"
#include "util/error.h"

namespace myriad {
namespace {

using Json = nlohmann::ordered_json;

QuantConfig from_config(const std::string& qc) {
    return parse_quant_config(Json::parse(qc), "m/config.json", nullptr, "");
}
QuantConfig from_hf(const std::string& hf) {
    return parse_quant_config(nullptr, "m/config.json", Json::parse(hf), "m/hf_quant_config.json");
}

// The bad-input message of `f`, or "" when it does not throw one.
template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2) << e.what();
        return e.what();
    }
    return "";
}

TEST(QuantConfig, NoneWhenAbsent) {
    QuantConfig q = parse_quant_config(nullptr, "c", nullptr, "");
    EXPECT_EQ(q.method, QuantMethod::None);
    EXPECT_FALSE(q.quantizes({"model.layers.0.mlp.gate_proj"}, true));
}

TEST(QuantConfig, LegacyModelOptExcludeGlobs) {
    QuantConfig q = from_hf(R"({"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
        "exclude_modules": ["lm_head", "model.layers.0.*", "*self_attn*", "model.layers.1*"]}})");
    EXPECT_EQ(q.method, QuantMethod::ModelOptNvfp4);
    EXPECT_EQ(q.group_size, 16);
    EXPECT_TRUE(q.kv_cache_fp8);
    EXPECT_NE(q.kv_cache_field.find("quantization.kv_cache_quant_algo"), std::string::npos);
    EXPECT_FALSE(q.quantizes({"lm_head"}, false));
    EXPECT_FALSE(q.quantizes({"model.layers.0.mlp.gate_proj"}, true));
    EXPECT_FALSE(q.quantizes({"model.layers.3.self_attn.q_a_proj"}, true));
    // "model.layers.1*" covers layer 1 and its children, not layer 12 (vLLM's name* expansion).
    EXPECT_FALSE(q.quantizes({"model.layers.1.mlp.experts.0.up_proj"}, true));
    EXPECT_TRUE(q.quantizes({"model.layers.12.mlp.experts.0.up_proj"}, true));
    EXPECT_TRUE(q.quantizes({"model.layers.3.mlp.shared_experts.down_proj"}, true));
}

TEST(QuantConfig, ModelOptInConfigJson) {
    QuantConfig q = from_config(R"({"quant_method": "modelopt", "quant_algo": "NVFP4",
        "ignore": ["lm_head", "language_model.model.layers.*.self_attn*"],
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": false},
        "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float",
                                                  "group_size": 16}, "targets": ["Linear"]}}})");
    EXPECT_EQ(q.method, QuantMethod::ModelOptNvfp4);
    EXPECT_TRUE(q.kv_cache_fp8);
    // Either spelling of a module (with or without the K2.5 prefix) may be ignored.
    EXPECT_FALSE(q.quantizes(
        {"model.layers.2.self_attn.o_proj", "language_model.model.layers.2.self_attn.o_proj"},
        true));
    EXPECT_TRUE(q.quantizes({"model.layers.2.mlp.down_proj"}, true));
}

TEST(QuantConfig, DeepSeekFp8QuantisesDecoderLinearsOnly) {
    QuantConfig q = from_config(R"({"activation_scheme": "dynamic", "fmt": "e4m3",
        "quant_method": "fp8", "weight_block_size": [128, 64]})");
    EXPECT_EQ(q.method, QuantMethod::Fp8Block);
    EXPECT_EQ(q.block_rows, 128);
    EXPECT_EQ(q.block_cols, 64);
    EXPECT_TRUE(q.quantizes({"model.layers.0.self_attn.kv_a_proj_with_mqa"}, true));
    EXPECT_FALSE(q.quantizes({"lm_head"}, false));
}

TEST(QuantConfig, CompressedTensorsInt4WithRegexIgnores) {
    QuantConfig q = from_config(R"({"quant_method": "compressed-tensors",
        "format": "pack-quantized", "ignore": ["lm_head", "re:.*self_attn.*",
        "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
        "kv_cache_scheme": null, "config_groups": {"group_0": {"input_activations": null,
        "targets": ["Linear"], "weights": {"group_size": 32, "num_bits": 4, "strategy": "group",
        "symmetric": true, "type": "int"}}}})");
    EXPECT_EQ(q.method, QuantMethod::CompressedInt4);
    EXPECT_EQ(q.group_size, 32);
    EXPECT_FALSE(q.kv_cache_fp8);
    EXPECT_TRUE(q.quantizes({"model.layers.1.mlp.experts.7.down_proj"}, true));
    EXPECT_FALSE(q.quantizes({"model.layers.0.mlp.down_proj"}, true));
    EXPECT_FALSE(q.quantizes({"model.layers.1.mlp.shared_experts.gate_proj"}, true));
    EXPECT_FALSE(q.quantizes({"model.layers.1.self_attn.q_b_proj"}, true));
}

TEST(QuantConfig, PatternForms) {
    EXPECT_TRUE(module_pattern_matches("model.layers.*.mlp", "model.layers.3.mlp"));
    EXPECT_TRUE(module_pattern_matches("model.layers.3.mlp", "model.layers.3.mlp.up_proj"));
    EXPECT_FALSE(module_pattern_matches("model.layers.3.mlp", "model.layers.3.mlpx"));
    EXPECT_TRUE(module_pattern_matches("*experts.?.gate_proj", "a.experts.5.gate_proj"));
    EXPECT_TRUE(module_pattern_matches("re:model\\.layers\\.\\d+\\.mlp", "model.layers.10.mlp.x"));
    EXPECT_FALSE(module_pattern_matches("re:mlp", "model.layers.10.mlp"));  // anchored at start
}

TEST(QuantConfig, MalformedConfigsNameTheField) {
    struct Case {
        const char* json;
        const char* want;
    };
    const Case config_cases[] = {
        {R"({"quant_algo": "NVFP4"})", "field quantization_config.quant_method is missing"},
        {R"({"quant_method": "awq"})", "field quantization_config.quant_method is \"awq\""},
        {R"({"quant_method": "modelopt", "quant_algo": "FP8"})",
         "field quantization_config.quant_algo is \"FP8\""},
        {R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": "lm_head"})",
         "field quantization_config.ignore has type string"},
        {R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 32})",
         "field quantization_config.group_size is 32"},
        {R"({"quant_method": "modelopt", "quant_algo": "NVFP4",
             "kv_cache_scheme": {"num_bits": 4, "type": "float"}})",
         "field quantization_config.kv_cache_scheme.num_bits is 4"},
        {R"({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]})",
         "field quantization_config.fmt is \"e5m2\""},
        {R"({"quant_method": "fp8", "fmt": "e4m3"})",
         "field quantization_config.weight_block_size is missing"},
        {R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128]})",
         "field quantization_config.weight_block_size must be a list of two"},
        {R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [0, 128]})",
         "field quantization_config.weight_block_size is [0, 128]"},
        {R"({"quant_method": "compressed-tensors", "format": "pack-quantized"})",
         "field quantization_config.config_groups is missing"},
        {R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
             "config_groups": {"g": {"targets": ["Linear"], "weights": {}}}})",
         "field quantization_config.config_groups.g.format is \"nvfp4-pack-quantized\""},
        {R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8,
             "type": "int", "symmetric": true, "group_size": 32}}}})",
         "field quantization_config.config_groups.g.weights.num_bits is 8"},
        {R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4,
             "type": "int", "symmetric": false, "group_size": 32}}}})",
         "field quantization_config.config_groups.g.weights.symmetric is false"},
        {R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
             "ignore": ["re:(unclosed"], "config_groups": {"g": {"targets": ["Linear"],
             "weights": {"num_bits": 4, "type": "int", "symmetric": true, "group_size": 32}}}})",
         "field quantization_config.ignore: \"re:(unclosed\" is not a valid regular expression"},
    };
    for (const Case& c : config_cases) {
        const std::string msg = error_of([&] { from_config(c.json); });
        EXPECT_NE(msg.find(c.want), std::string::npos) << "got: " << msg << "\nwant: " << c.want;
        EXPECT_NE(msg.find("m/config.json"), std::string::npos) << msg;
    }
    const Case hf_cases[] = {
        {R"({"producer": {}})", "field quantization is missing"},
        {R"({"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": null,
             "exclude_modules": []}})",
         "field quantization.group_size is missing"},
        {R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": []}})",
         "field quantization.kv_cache_quant_algo is missing"},
        {R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16,
             "kv_cache_quant_algo": "INT8", "exclude_modules": []}})",
         "field quantization.kv_cache_quant_algo is \"INT8\""},
        {R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16,
             "kv_cache_quant_algo": null}})",
         "field quantization.exclude_modules is missing"},
    };
    for (const Case& c : hf_cases) {
        const std::string msg = error_of([&] { from_hf(c.json); });
        EXPECT_NE(msg.find(c.want), std::string::npos) << "got: " << msg << "\nwant: " << c.want;
        EXPECT_NE(msg.find("m/hf_quant_config.json"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace myriad
