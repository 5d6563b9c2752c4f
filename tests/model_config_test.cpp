#include "model/model_config.h"
#include "model/layout_check.h"

#include <gtest/gtest.h>

#include <string>

#include "format/json_file.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad {
namespace {

using Json = nlohmann::ordered_json;

std::string fixture(std::string_view name) {
    return std::string(MYRIAD_SOURCE_DIR) + "/tests/data/configs/" + std::string(name);
}

Json fixture_json(std::string_view name) {
    return read_json_file(fixture(name) + "/config.json");
}

// The message of the bad-input Error that parsing `json` throws.
std::string parse_error(const Json& json) {
    try {
        parse_model_config(json, "config.json");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        std::string msg = e.what();
        EXPECT_TRUE(msg.starts_with("config.json: ")) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        return msg;
    }
    ADD_FAILURE() << "accepted: " << json.dump();
    return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(ModelConfig, DeepSeekV3) {
    ModelConfig c = load_model_config(fixture("deepseek-v3-fp8"));
    EXPECT_EQ(c.path, fixture("deepseek-v3-fp8") + "/config.json");
    EXPECT_EQ(c.model_type, "deepseek_v3");
    EXPECT_FALSE(c.multimodal);
    EXPECT_EQ(c.outer_model_type, "");
    EXPECT_EQ(c.vocab_size, 129280);
    EXPECT_EQ(c.hidden_size, 7168);
    EXPECT_EQ(c.intermediate_size, 18432);
    EXPECT_EQ(c.moe_intermediate_size, 2048);
    EXPECT_EQ(c.num_hidden_layers, 61);
    EXPECT_EQ(c.num_attention_heads, 128);
    EXPECT_EQ(c.num_key_value_heads, 128);
    EXPECT_EQ(c.q_lora_rank, 1536);
    EXPECT_EQ(c.kv_lora_rank, 512);
    EXPECT_EQ(c.qk_nope_head_dim, 128);
    EXPECT_EQ(c.qk_rope_head_dim, 64);
    EXPECT_EQ(c.v_head_dim, 128);
    EXPECT_EQ(c.qk_head_dim(), 192);
    EXPECT_EQ(c.n_routed_experts, 256);
    EXPECT_EQ(c.num_experts_per_tok, 8);
    EXPECT_EQ(c.n_shared_experts, 1);
    EXPECT_EQ(c.first_k_dense_replace, 3);
    EXPECT_EQ(c.moe_layer_freq, 1);
    EXPECT_EQ(c.n_group, 8);
    EXPECT_EQ(c.topk_group, 4);
    EXPECT_TRUE(c.norm_topk_prob);
    EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
    EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
    EXPECT_TRUE(c.rope_scaling.yarn);
    EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 40.0);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
    EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 32.0);
    EXPECT_DOUBLE_EQ(c.rope_scaling.beta_slow, 1.0);
    EXPECT_DOUBLE_EQ(c.rope_scaling.mscale, 1.0);
    EXPECT_DOUBLE_EQ(c.rope_scaling.mscale_all_dim, 1.0);
    EXPECT_FALSE(c.rope_scaling.attention_factor.has_value());
    EXPECT_EQ(c.max_position_embeddings, 163840);
    EXPECT_EQ(c.num_nextn_predict_layers, 1);
    EXPECT_EQ(c.bos_token_id, 0);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{1});
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.torch_dtype, "bfloat16");
    EXPECT_EQ(c.quantization_config["quant_method"], "fp8");
    EXPECT_EQ(c.quantization_config["weight_block_size"], Json({128, 128}));
    EXPECT_FALSE(c.is_moe_layer(2));
    EXPECT_TRUE(c.is_moe_layer(3));
}

TEST(ModelConfig, KimiK2Instruct) {
    ModelConfig c = load_model_config(fixture("kimi-k2-instruct-fp8") + "/config.json");
    EXPECT_EQ(c.model_type, "kimi_k2");
    EXPECT_FALSE(c.multimodal);
    EXPECT_EQ(c.vocab_size, 163840);
    EXPECT_EQ(c.num_attention_heads, 64);
    EXPECT_EQ(c.num_key_value_heads, 64);
    EXPECT_EQ(c.q_lora_rank, 1536);
    EXPECT_EQ(c.n_routed_experts, 384);
    EXPECT_EQ(c.num_experts_per_tok, 8);
    EXPECT_EQ(c.n_shared_experts, 1);
    EXPECT_EQ(c.first_k_dense_replace, 1);
    EXPECT_EQ(c.n_group, 1);
    EXPECT_EQ(c.topk_group, 1);
    EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.827);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
    EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
    EXPECT_TRUE(c.rope_scaling.yarn);
    EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
    EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 1.0);
    EXPECT_DOUBLE_EQ(c.rope_scaling.beta_slow, 1.0);
    EXPECT_DOUBLE_EQ(c.rope_scaling.mscale_all_dim, 1.0);
    EXPECT_EQ(c.max_position_embeddings, 131072);
    EXPECT_EQ(c.num_nextn_predict_layers, 0);
    EXPECT_EQ(c.bos_token_id, 163584);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{163585});
    EXPECT_EQ(c.quantization_config["quant_method"], "fp8");
}

TEST(ModelConfig, KimiK25Multimodal) {
    ModelConfig c = load_model_config(fixture("kimi-k2.5-nvfp4"));
    EXPECT_TRUE(c.multimodal);
    EXPECT_EQ(c.outer_model_type, "kimi_k25");
    EXPECT_EQ(c.model_type, "kimi_k2");
    EXPECT_EQ(c.vocab_size, 163840);
    EXPECT_EQ(c.hidden_size, 7168);  // text_config's, not vision_config's 1152
    EXPECT_EQ(c.num_hidden_layers, 61);
    EXPECT_EQ(c.num_attention_heads, 64);
    EXPECT_EQ(c.n_routed_experts, 384);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
    EXPECT_TRUE(c.rope_scaling.yarn);
    EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 64.0);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
    EXPECT_EQ(c.max_position_embeddings, 262144);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{163585});
    // The quantisation of the wrapper lives at its top level.
    EXPECT_EQ(c.quantization_config["quant_method"], "modelopt");
    EXPECT_EQ(c.quantization_config["quant_algo"], "NVFP4");
}

TEST(ModelConfig, Moonlight) {
    ModelConfig c = load_model_config(fixture("moonlight-16b-a3b"));
    EXPECT_EQ(c.model_type, "deepseek_v3");
    EXPECT_EQ(c.q_lora_rank, 0);  // null: q_proj
    EXPECT_EQ(c.hidden_size, 2048);
    EXPECT_EQ(c.intermediate_size, 11264);
    EXPECT_EQ(c.moe_intermediate_size, 1408);
    EXPECT_EQ(c.num_hidden_layers, 27);
    EXPECT_EQ(c.num_attention_heads, 16);
    EXPECT_EQ(c.n_routed_experts, 64);
    EXPECT_EQ(c.num_experts_per_tok, 6);
    EXPECT_EQ(c.n_shared_experts, 2);
    EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.446);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
    EXPECT_FALSE(c.rope_scaling.yarn);
    EXPECT_EQ(c.rope_scaling, RopeScaling{});
    EXPECT_EQ(c.max_position_embeddings, 8192);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{163586});
    EXPECT_TRUE(c.quantization_config.is_null());
}

TEST(ModelConfig, BothRopeFormsGiveTheSameScaling) {
    const Json legacy = fixture_json("deepseek-v3-fp8");
    const ModelConfig expected = parse_model_config(legacy, "config.json");

    Json with_rope_type = legacy;  // rope_scaling keyed rope_type instead of type
    with_rope_type["rope_scaling"].erase("type");
    with_rope_type["rope_scaling"]["rope_type"] = "yarn";

    Json v5 = legacy;  // transformers >= 5: rope_parameters with rope_theta inside
    v5.erase("rope_scaling");
    v5.erase("rope_theta");
    v5["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0},
                             {"factor", 40.0},      {"original_max_position_embeddings", 4096},
                             {"beta_fast", 32.0},   {"beta_slow", 1.0},
                             {"mscale", 1.0},       {"mscale_all_dim", 1.0}};

    Json both = legacy;  // both forms, agreeing
    both["rope_parameters"] = v5["rope_parameters"];

    for (const Json& j : {with_rope_type, v5, both}) {
        ModelConfig c = parse_model_config(j, "config.json");
        EXPECT_EQ(c.rope_scaling, expected.rope_scaling) << j.dump();
        EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
    }

    Json plain = fixture_json("moonlight-16b-a3b");  // no scaling in either form
    plain.erase("rope_scaling");
    plain.erase("rope_theta");
    plain["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 50000.0}};
    ModelConfig c = parse_model_config(plain, "config.json");
    EXPECT_FALSE(c.rope_scaling.yarn);
    EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
}

TEST(ModelConfig, RopeFormsThatDisagreeOrAreUnsupportedAreBadInput) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    Json j = v3;
    j["rope_parameters"] = {
        {"rope_type", "yarn"}, {"factor", 32.0}, {"original_max_position_embeddings", 4096}};
    std::string msg = parse_error(j);
    EXPECT_HAS(msg, "rope_scaling");
    EXPECT_HAS(msg, "rope_parameters");

    j = v3;
    j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 50000.0},
                            {"factor", 40},        {"original_max_position_embeddings", 4096},
                            {"beta_fast", 32},     {"beta_slow", 1},
                            {"mscale", 1.0},       {"mscale_all_dim", 1.0}};
    msg = parse_error(j);
    EXPECT_HAS(msg, "rope_theta is 10000");
    EXPECT_HAS(msg, "rope_parameters.rope_theta is 50000");

    j = v3;
    j["rope_scaling"]["rope_type"] = "linear";
    EXPECT_HAS(parse_error(j), "field rope_scaling.type is \"yarn\" but rope_type is \"linear\"");

    j = v3;
    j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
    msg = parse_error(j);
    EXPECT_HAS(msg, "field rope_scaling.type is \"dynamic\"");
    EXPECT_HAS(msg, "yarn");

    j = v3;
    j["rope_scaling"].erase("factor");
    EXPECT_HAS(parse_error(j), "field rope_scaling.factor is missing");

    j = v3;
    j["rope_scaling"].erase("original_max_position_embeddings");
    EXPECT_HAS(parse_error(j), "field rope_scaling.original_max_position_embeddings is missing");

    j = v3;
    j["rope_scaling"].erase("type");
    EXPECT_HAS(parse_error(j), "field rope_scaling.rope_type is missing");

    j = v3;
    j["rope_scaling"]["factor"] = "40";
    EXPECT_HAS(parse_error(j), "field rope_scaling.factor has type string, expected number");

    j = v3;
    j["rope_scaling"] = "yarn";
    EXPECT_HAS(parse_error(j), "field rope_scaling has type string, expected object");

    j = v3;
    j.erase("rope_theta");
    EXPECT_HAS(parse_error(j), "field rope_theta is missing");

    j = v3;
    j["rope_scaling"] = {{"type", "default"}};
    EXPECT_FALSE(parse_model_config(j, "config.json").rope_scaling.yarn);
}

TEST(ModelConfig, MissingRequiredFieldsAreNamed) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    for (const char* field :
         {"vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size",
          "num_hidden_layers", "num_attention_heads", "kv_lora_rank", "qk_nope_head_dim",
          "qk_rope_head_dim", "v_head_dim", "n_routed_experts", "num_experts_per_tok",
          "rms_norm_eps", "max_position_embeddings", "rope_theta", "q_lora_rank", "model_type"}) {
        Json j = v3;
        j.erase(field);
        EXPECT_HAS(parse_error(j), fmt::format("config.json: field {} is missing", field));
    }
}

TEST(ModelConfig, WrongTypesAndRangesAreNamed) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    Json j = v3;
    j["vocab_size"] = "129280";
    EXPECT_EQ(parse_error(j), "config.json: field vocab_size has type string, expected integer");
    j = v3;
    j["hidden_size"] = 7168.5;
    EXPECT_HAS(parse_error(j), "field hidden_size is 7168.5, expected an integer");
    j = v3;
    j["rms_norm_eps"] = true;
    EXPECT_HAS(parse_error(j), "field rms_norm_eps has type boolean, expected number");
    j = v3;
    j["norm_topk_prob"] = 1;
    EXPECT_HAS(parse_error(j), "field norm_topk_prob has type integer, expected boolean");
    j = v3;
    j["num_hidden_layers"] = 0;
    EXPECT_HAS(parse_error(j), "field num_hidden_layers must be positive, got 0");
    j = v3;
    j["q_lora_rank"] = -1;
    EXPECT_HAS(parse_error(j), "field q_lora_rank must be positive");
    j = v3;
    j["eos_token_id"] = {1, "two"};
    EXPECT_HAS(parse_error(j), "field eos_token_id[1] has type string, expected integer");
    j = v3;
    j["quantization_config"] = "fp8";
    EXPECT_HAS(parse_error(j), "field quantization_config has type string");
    EXPECT_HAS(parse_error(Json::array()), "expected a JSON object");
    // 4096.0 is an integer written as a float.
    j = v3;
    j["max_position_embeddings"] = 163840.0;
    EXPECT_EQ(parse_model_config(j, "config.json").max_position_embeddings, 163840);
}

TEST(ModelConfig, UnsupportedModelTypesNameTheSupportedOnes) {
    Json j = fixture_json("deepseek-v3-fp8");
    j["model_type"] = "deepseek_v2";
    std::string msg = parse_error(j);
    EXPECT_HAS(msg, "field model_type is \"deepseek_v2\"");
    EXPECT_HAS(msg, "deepseek_v3");
    EXPECT_HAS(msg, "kimi_k2");
    EXPECT_HAS(msg, "kimi_k25");

    j = fixture_json("kimi-k2.5-nvfp4");
    j["text_config"]["model_type"] = "qwen3";
    EXPECT_HAS(parse_error(j), "field text_config.model_type is \"qwen3\"");

    j = fixture_json("kimi-k2.5-nvfp4");
    j["text_config"].erase("hidden_size");
    EXPECT_HAS(parse_error(j), "field text_config.hidden_size is missing");

    j = fixture_json("kimi-k2.5-nvfp4");
    j["text_config"] = 3;
    EXPECT_HAS(parse_error(j), "field text_config has type integer, expected object");
}

TEST(ModelConfig, MultimodalTokenIdsMayBeAtTheTop) {
    Json j = fixture_json("kimi-k2.5-nvfp4");
    j["text_config"].erase("eos_token_id");
    j["text_config"].erase("bos_token_id");
    j["eos_token_id"] = {163585, 163586};
    j["bos_token_id"] = 163584;
    ModelConfig c = parse_model_config(j, "config.json");
    EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{163585, 163586}));
    EXPECT_EQ(c.bos_token_id, 163584);
}

TEST(ModelConfig, OptionalFieldsTakeHuggingFaceDefaults) {
    Json j = fixture_json("kimi-k2-instruct-fp8");
    for (const char* field :
         {"num_key_value_heads", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq",
          "n_group", "topk_group", "scoring_func", "topk_method", "norm_topk_prob",
          "routed_scaling_factor", "num_nextn_predict_layers", "tie_word_embeddings",
          "bos_token_id", "eos_token_id", "quantization_config", "torch_dtype"})
        j.erase(field);
    ModelConfig c = parse_model_config(j, "config.json");
    EXPECT_EQ(c.num_key_value_heads, 64);  // = num_attention_heads
    EXPECT_EQ(c.n_shared_experts, 1);
    EXPECT_EQ(c.first_k_dense_replace, 3);
    EXPECT_EQ(c.moe_layer_freq, 1);
    EXPECT_EQ(c.n_group, 8);
    EXPECT_EQ(c.topk_group, 4);
    EXPECT_EQ(c.scoring_func, "sigmoid");
    EXPECT_EQ(c.topk_method, "noaux_tc");
    EXPECT_TRUE(c.norm_topk_prob);
    EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
    EXPECT_EQ(c.num_nextn_predict_layers, 0);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_FALSE(c.bos_token_id.has_value());
    EXPECT_TRUE(c.eos_token_ids.empty());
    EXPECT_TRUE(c.quantization_config.is_null());

    j = fixture_json("kimi-k2-instruct-fp8");
    j["tie_word_embeddings"] = true;
    EXPECT_TRUE(parse_model_config(j, "config.json").tie_word_embeddings);
}

TEST(ModelConfig, RoutingAndAttentionShapesAreValidated) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    struct Case {
        std::vector<std::pair<const char*, Json>> set;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {{{"scoring_func", "softmax"}, {"topk_method", "greedy"}},
         "DeepSeek-V2-style routing is not supported"},
        {{{"topk_method", "group_limited_greedy"}}, "DeepSeek-V2-style routing"},
        {{{"n_group", 7}}, "field n_group = 7 does not divide n_routed_experts = 256"},
        {{{"topk_group", 9}}, "field topk_group = 9 is more than n_group = 8"},
        {{{"num_experts_per_tok", 300}},
         "field num_experts_per_tok = 300 is more than n_routed_experts"},
        {{{"n_group", 256}, {"topk_group", 8}}, "field n_group = 256 leaves 1 expert per group"},
        {{{"topk_group", 1}, {"num_experts_per_tok", 33}},
         "field num_experts_per_tok = 33 is more than the 32 experts of topk_group = 1"},
        {{{"num_key_value_heads", 1}},
         "field num_key_value_heads is 1 but num_attention_heads is 128"},
        {{{"qk_rope_head_dim", 63}}, "field qk_rope_head_dim must be even"},
        {{{"n_shared_experts", -1}}, "field n_shared_experts must be at least 0"},
        {{{"moe_layer_freq", 0}}, "field moe_layer_freq must be at least 1"},
    };
    for (const auto& c : cases) {
        Json j = v3;
        for (const auto& [key, value] : c.set) j[key] = value;
        EXPECT_HAS(parse_error(j), c.expected);
    }
}

TEST(ModelConfig, CheckLayoutSaysWhichSizesWork) {
    ModelConfig v3 = load_model_config(fixture("deepseek-v3-fp8"));
    auto validate_tp = [](const ModelConfig& c, int world) {
        check_layout(c, Layout(world, false));
    };
    for (int world : {1, 2, 4, 8, 16}) EXPECT_NO_THROW(validate_tp(v3, world)) << world;
    try {
        validate_tp(v3, 256);
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        std::string msg = e.what();
        EXPECT_HAS(msg, "field num_attention_heads = 128");
        EXPECT_HAS(msg, "--tp values that work: 1, 2, 4, 8, 16, 32, 64, 128");
    }
    ModelConfig odd = v3;
    odd.moe_intermediate_size = 1000;  // 8 x 125
    try {
        validate_tp(odd, 16);
        FAIL() << "accepted";
    } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_HAS(msg, "field moe_intermediate_size = 1000");
        EXPECT_HAS(msg, "--tp values that work: 1, 2, 4, 8");
    }
    EXPECT_THROW(check_layout(v3, Layout(3, false)), Error);
    // Expert parallelism cuts no routed expert: moe_intermediate_size need not divide, the
    // shared experts' width (1000 x 1) still must.
    odd.n_shared_experts = 0;
    EXPECT_NO_THROW(check_layout(odd, Layout(16, true)));
    EXPECT_THROW(check_layout(odd, Layout(16, false)), Error);
    odd.n_shared_experts = 1;
    try {
        check_layout(odd, Layout(16, true));
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_HAS(std::string(e.what()),
                   "--tp 16 --expert-parallel does not divide field "
                   "moe_intermediate_size * n_shared_experts = 1000");
    }
}

// Counts beyond any model's are refused before anything is sized by them (a billion layers
// used to allocate the per-layer tables first and end in bad_alloc).
TEST(ModelConfig, HugeCountsAreRefusedNamingTheField) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    for (const char* field : {"num_hidden_layers", "n_routed_experts", "vocab_size"}) {
        for (int64_t n : {int64_t{100'000'000}, int64_t{1'000'000'000}}) {
            Json j = v3;
            j[field] = n;
            if (std::string_view(field) == "n_routed_experts")
                j["n_group"] = 1, j["topk_group"] = 1;
            EXPECT_HAS(parse_error(j), fmt::format("field {} = {} is more than", field, n));
        }
    }
    Json j = v3;  // each count within bounds, their product not
    j["num_hidden_layers"] = 1000;
    j["n_routed_experts"] = 8192;
    EXPECT_HAS(parse_error(j),
               "field num_hidden_layers = 1000 times field n_routed_experts = 8192");
}

TEST(ModelConfig, TokenIdsAndRopeThetaOutOfRange) {
    const Json v3 = fixture_json("deepseek-v3-fp8");
    Json j = v3;
    j["bos_token_id"] = -1;
    EXPECT_HAS(parse_error(j), "field bos_token_id = -1 is not a token id");
    j = v3;
    j["bos_token_id"] = 129280;
    EXPECT_HAS(parse_error(j),
               "field bos_token_id = 129280 is not a token id: the vocabulary "
               "has ids 0 to 129279");
    j = v3;
    j["eos_token_id"] = {1, -5};
    EXPECT_HAS(parse_error(j), "field eos_token_id holds -5, not a token id");
    j = v3;
    j["rope_theta"] = 1e308;
    EXPECT_HAS(parse_error(j), "field rope_theta = 1e+308 is more than 1e+12");
    // An eos id past the vocabulary is only warned about (it can never be sampled).
    j = v3;
    j["eos_token_id"] = 200000;
    EXPECT_EQ(parse_model_config(j, "config.json").eos_token_ids, std::vector<int64_t>{200000});
}

// A config whose counts need more weights than its folder's files hold names the field.
TEST(ModelConfig, CountsAreBoundedByTheWeightFiles) {
    testing::TempDir dir;
    Json j = fixture_json("deepseek-v3-fp8");
    j.erase("quantization_config");
    dir.write("config.json", j.dump());
    dir.write("model.safetensors", std::string(1 << 20, '\0'));  // 1 MB: far too small
    try {
        load_model_config(dir.path());
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_HAS(std::string(e.what()), "field num_hidden_layers = 61 needs at least");
        EXPECT_HAS(std::string(e.what()), "the model's files hold 1048576 bytes");
    }
}

TEST(ModelConfig, FileErrorsNameTheFile) {
    testing::TempDir dir;
    try {
        load_model_config(dir.path());
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_HAS(std::string(e.what()), dir.path());
    }
    std::string path = dir.write("config.json", "{\"model_type\": \"deepseek_v3\",,}");
    try {
        load_model_config(dir.path());
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_HAS(std::string(e.what()), path + ": not valid JSON");
    }
}

}  // namespace
}  // namespace myriad
