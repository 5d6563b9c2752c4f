#include "model/model_config.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include <fmt/ranges.h>

#include "format/json_fields.h"
#include "format/json_file.h"
#include "model/config_bounds.h"
#include "model/gguf_config.h"
#include "util/error.h"

namespace myriad {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 2> kTextModelTypes = {"deepseek_v3", "kimi_k2"};

bool is_text_model_type(std::string_view t) {
    return std::find(kTextModelTypes.begin(), kTextModelTypes.end(), t) != kTextModelTypes.end();
}

// Defaults of the optional fields: HF transformers DeepseekV3Config where it has the field;
// where it does not (scoring_func, topk_method, moe_layer_freq, num_nextn_predict_layers), what
// HF's modeling code does without it (sigmoid noaux_tc routing, every layer past
// first_k_dense_replace is MoE, no MTP layer).
constexpr int64_t kDefaultSharedExperts = 1;
constexpr int64_t kDefaultFirstKDense = 3;
constexpr int64_t kDefaultNGroup = 8;
constexpr int64_t kDefaultTopkGroup = 4;
constexpr double kDefaultRoutedScaling = 2.5;

// One rope description (`rope_scaling` or `rope_parameters`) and the rope_theta it carries.
struct RopeForm {
    RopeScaling scaling;
    std::optional<double> theta;
};

RopeForm parse_rope(const JsonFields& f) {
    RopeForm form;
    if (auto theta = f.opt_number("rope_theta")) {
        if (!(*theta > 0.0)) f.fail("rope_theta", fmt::format("must be positive, got {}", *theta));
        form.theta = theta;
    }
    auto type = f.opt_string("type");
    auto rope_type = f.opt_string("rope_type");
    if (type && rope_type && *type != *rope_type)
        f.fail("type", fmt::format("is \"{}\" but rope_type is \"{}\"", printable(*type),
                                   printable(*rope_type)));
    if (!type) type = rope_type;
    if (!type) {
        // Only {rope_theta} (or nothing) without a type is plain RoPE; scaling keys without a
        // type would silently drop the scaling, so they are an error.
        for (std::string_view key : {"factor", "original_max_position_embeddings", "beta_fast",
                                     "beta_slow", "mscale", "mscale_all_dim"})
            if (f.has(key)) f.fail("rope_type", "is missing (expected yarn or default)");
        return form;
    }
    if (*type == "default") return form;
    if (*type != "yarn")
        f.fail(rope_type ? "rope_type" : "type",
               fmt::format("is \"{}\": myriad supports yarn and default (no scaling)",
                           printable(*type)));

    RopeScaling& s = form.scaling;
    s.yarn = true;
    s.factor = f.positive_number("factor");
    s.original_max_position_embeddings = f.positive_integer("original_max_position_embeddings");
    s.beta_fast = f.opt_number("beta_fast").value_or(s.beta_fast);
    s.beta_slow = f.opt_number("beta_slow").value_or(s.beta_slow);
    if (!(s.beta_fast > 0.0))
        f.fail("beta_fast", fmt::format("must be positive, got {}", s.beta_fast));
    if (!(s.beta_slow > 0.0))
        f.fail("beta_slow", fmt::format("must be positive, got {}", s.beta_slow));
    s.mscale = f.opt_number("mscale").value_or(1.0);
    s.mscale_all_dim = f.opt_number("mscale_all_dim").value_or(0.0);
    s.attention_factor = f.opt_number("attention_factor");
    // transformers' truncate=false keeps the correction range fractional; the reference formula
    // (reference.md §1.5) floors and ceils it.
    if (auto truncate = f.opt_boolean("truncate"); truncate && !*truncate)
        f.fail("truncate", "is false: only truncated YaRN correction ranges are supported");
    return form;
}

void read_rope(const JsonFields& t, ModelConfig& c) {
    std::optional<double> theta = t.opt_number("rope_theta");
    std::string theta_from = t.field_name("rope_theta");
    std::optional<RopeScaling> scaling;
    std::string scaling_from;
    for (std::string_view key : {"rope_scaling", "rope_parameters"}) {
        const Json* v = t.find(key);
        if (v == nullptr || v->is_null()) continue;
        RopeForm form = parse_rope(JsonFields(*v, t.source(), t.field_name(key) + "."));
        if (scaling && !(*scaling == form.scaling))
            bad_input(
                "{}: fields {} and {} describe different RoPE scaling; remove one or make "
                "them agree",
                t.source(), scaling_from, t.field_name(key));
        scaling = form.scaling;
        scaling_from = t.field_name(key);
        if (form.theta) {
            if (theta && *theta != *form.theta)
                bad_input("{}: {} is {} but {}.rope_theta is {}", t.source(), theta_from, *theta,
                          t.field_name(key), *form.theta);
            theta = form.theta;
            theta_from = t.field_name(key) + ".rope_theta";
        }
    }
    if (!theta) t.fail("rope_theta", "is missing (neither at top level nor in rope_parameters)");
    if (!(*theta > 0.0)) t.fail("rope_theta", fmt::format("must be positive, got {}", *theta));
    c.rope_theta = *theta;
    c.rope_scaling = scaling.value_or(RopeScaling{});
}

std::vector<int64_t> read_eos(const JsonFields& f) {
    std::vector<int64_t> ids;
    const Json* eos = f.find("eos_token_id");
    if (eos == nullptr || eos->is_null()) return ids;
    if (eos->is_array()) {
        for (size_t i = 0; i < eos->size(); ++i)
            ids.push_back(f.as_integer((*eos)[i], fmt::format("eos_token_id[{}]", i)));
    } else {
        ids.push_back(f.as_integer(*eos, "eos_token_id"));
    }
    return ids;
}

void read_text_fields(const JsonFields& t, ModelConfig& c) {
    c.vocab_size = t.positive_integer("vocab_size");
    c.hidden_size = t.positive_integer("hidden_size");
    c.intermediate_size = t.positive_integer("intermediate_size");
    c.moe_intermediate_size = t.positive_integer("moe_intermediate_size");
    c.num_hidden_layers = t.positive_integer("num_hidden_layers");
    c.num_attention_heads = t.positive_integer("num_attention_heads");
    c.num_key_value_heads = t.opt_integer("num_key_value_heads").value_or(c.num_attention_heads);
    // q_lora_rank must be written down: null selects q_proj, a number q_a_proj/q_b_proj.
    if (t.find("q_lora_rank") == nullptr) t.fail("q_lora_rank", "is missing (null if none)");
    c.q_lora_rank = t.has("q_lora_rank") ? t.positive_integer("q_lora_rank") : 0;
    c.kv_lora_rank = t.positive_integer("kv_lora_rank");
    c.qk_nope_head_dim = t.positive_integer("qk_nope_head_dim");
    c.qk_rope_head_dim = t.positive_integer("qk_rope_head_dim");
    c.v_head_dim = t.positive_integer("v_head_dim");
    c.n_routed_experts = t.positive_integer("n_routed_experts");
    c.num_experts_per_tok = t.positive_integer("num_experts_per_tok");
    c.n_shared_experts = t.opt_integer("n_shared_experts").value_or(kDefaultSharedExperts);
    c.first_k_dense_replace = t.opt_integer("first_k_dense_replace").value_or(kDefaultFirstKDense);
    c.moe_layer_freq = t.opt_integer("moe_layer_freq").value_or(1);
    c.n_group = t.opt_integer("n_group").value_or(kDefaultNGroup);
    c.topk_group = t.opt_integer("topk_group").value_or(kDefaultTopkGroup);
    c.scoring_func = t.opt_string("scoring_func").value_or("sigmoid");
    c.topk_method = t.opt_string("topk_method").value_or("noaux_tc");
    c.norm_topk_prob = t.opt_boolean("norm_topk_prob").value_or(true);
    c.routed_scaling_factor = t.opt_number("routed_scaling_factor").value_or(kDefaultRoutedScaling);
    c.rms_norm_eps = t.positive_number("rms_norm_eps");
    c.max_position_embeddings = t.positive_integer("max_position_embeddings");
    c.num_nextn_predict_layers = t.opt_integer("num_nextn_predict_layers").value_or(0);
    c.tie_word_embeddings = t.opt_boolean("tie_word_embeddings").value_or(false);
    read_rope(t, c);
}

// Ranges and relations the forward pass relies on.
void validate(const JsonFields& t, const ModelConfig& c) {
    auto at_least = [&](std::string_view name, int64_t value, int64_t min) {
        if (value < min) t.fail(name, fmt::format("must be at least {}, got {}", min, value));
    };
    at_least("n_shared_experts", c.n_shared_experts, 0);
    at_least("first_k_dense_replace", c.first_k_dense_replace, 0);
    at_least("moe_layer_freq", c.moe_layer_freq, 1);
    at_least("n_group", c.n_group, 1);
    at_least("topk_group", c.topk_group, 1);
    at_least("num_nextn_predict_layers", c.num_nextn_predict_layers, 0);
    if (!(c.routed_scaling_factor > 0.0))
        t.fail("routed_scaling_factor",
               fmt::format("must be positive, got {}", c.routed_scaling_factor));

    if (c.scoring_func != "sigmoid" || c.topk_method != "noaux_tc")
        bad_input(
            "{}: fields {} = \"{}\" and {} = \"{}\": DeepSeek-V2-style routing is not "
            "supported; myriad needs scoring_func sigmoid with topk_method noaux_tc "
            "(DeepSeek-V3 routing)",
            t.source(), t.field_name("scoring_func"), printable(c.scoring_func),
            t.field_name("topk_method"), printable(c.topk_method));
    if (c.num_key_value_heads != c.num_attention_heads)
        t.fail("num_key_value_heads",
               fmt::format("is {} but num_attention_heads is {}: MLA needs them equal",
                           c.num_key_value_heads, c.num_attention_heads));
    if (c.qk_rope_head_dim % 2 != 0)
        t.fail("qk_rope_head_dim", fmt::format("must be even, got {}", c.qk_rope_head_dim));

    if (c.n_routed_experts % c.n_group != 0)
        t.fail("n_group", fmt::format("= {} does not divide n_routed_experts = {}", c.n_group,
                                      c.n_routed_experts));
    if (c.topk_group > c.n_group)
        t.fail("topk_group",
               fmt::format("= {} is more than n_group = {}", c.topk_group, c.n_group));
    if (c.num_experts_per_tok > c.n_routed_experts)
        t.fail("num_experts_per_tok", fmt::format("= {} is more than n_routed_experts = {}",
                                                  c.num_experts_per_tok, c.n_routed_experts));
    if (c.n_group > 1) {
        int64_t per_group = c.n_routed_experts / c.n_group;
        // A group's score is the sum of its top 2 experts.
        if (per_group < 2)
            t.fail("n_group", fmt::format("= {} leaves {} expert per group; grouped routing "
                                          "scores each group by its top 2 experts",
                                          c.n_group, per_group));
        if (c.num_experts_per_tok > c.topk_group * per_group)
            t.fail("num_experts_per_tok",
                   fmt::format("= {} is more than the {} experts of topk_group = {} groups",
                               c.num_experts_per_tok, c.topk_group * per_group, c.topk_group));
    }
}

ConfigFieldNames field_names(const JsonFields& t) {
    auto field = [&](std::string_view name) { return "field " + t.field_name(name); };
    return {field("num_hidden_layers"), field("n_routed_experts"), field("vocab_size"),
            field("hidden_size"),       field("bos_token_id"),     field("eos_token_id"),
            field("rope_theta")};
}

// Bytes of the weight files (*.safetensors) in `folder`; 0 when there are none.
uint64_t weight_file_bytes(const std::filesystem::path& folder) {
    std::error_code ec;
    uint64_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(folder, ec))
        if (e.path().extension() == ".safetensors" && e.is_regular_file(ec))
            total += e.file_size(ec);
    return total;
}

}  // namespace

ModelConfig parse_model_config(const Json& json, const std::string& source) {
    ModelConfig c;
    c.path = source;
    const JsonFields top(json, source);
    c.model_type = top.string("model_type");
    const Json* text_json = &json;
    std::string prefix;
    if (!is_text_model_type(c.model_type)) {
        if (!top.has("text_config"))
            top.fail("model_type",
                     fmt::format("is \"{}\"; supported: {}, or a multimodal config (such as "
                                 "kimi_k25) whose text_config has one of those",
                                 printable(c.model_type), fmt::join(kTextModelTypes, ", ")));
        c.outer_model_type = c.model_type;
        c.multimodal = true;
        text_json = top.find("text_config");
        prefix = "text_config.";
    }
    const JsonFields text(*text_json, source, prefix);
    if (c.multimodal) {
        c.model_type = text.string("model_type");
        if (!is_text_model_type(c.model_type))
            text.fail("model_type", fmt::format("is \"{}\"; supported: {}", printable(c.model_type),
                                                fmt::join(kTextModelTypes, ", ")));
    }

    read_text_fields(text, c);
    validate(text, c);

    // Token ids, dtype and quantisation may sit in text_config or at the top of a wrapper.
    c.bos_token_id = text.opt_integer("bos_token_id");
    c.eos_token_ids = read_eos(text);
    if (c.multimodal) {
        if (!c.bos_token_id) c.bos_token_id = top.opt_integer("bos_token_id");
        if (c.eos_token_ids.empty()) c.eos_token_ids = read_eos(top);
    }
    for (const JsonFields* f : {&text, &top}) {
        if (c.torch_dtype.empty()) c.torch_dtype = f->opt_string("torch_dtype").value_or("");
        if (c.torch_dtype.empty()) c.torch_dtype = f->opt_string("dtype").value_or("");
    }
    for (const JsonFields* f : {&top, &text}) {
        const Json* q = f->find("quantization_config");
        if (q == nullptr || q->is_null() || !c.quantization_config.is_null()) continue;
        if (!q->is_object())
            f->fail("quantization_config",
                    fmt::format("has type {}, expected object", json_type_name(*q)));
        c.quantization_config = *q;
    }
    c.quant = parse_quant_config(c.quantization_config, source, nullptr, "");
    check_config_values(c, field_names(text), source);
    return c;
}

ModelConfig load_model_config(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string file = path;
    if (is_gguf_path(path) && !fs::is_directory(path, ec))
        return gguf_model_config(*GgufModel::open(path));
    if (fs::is_directory(path, ec)) {
        file = (fs::path(path) / "config.json").string();
        if (!fs::exists(file, ec)) bad_input("{}: no config.json in this folder", path);
    }
    ModelConfig c = parse_model_config(read_json_file(file), file);
    // Legacy ModelOpt exports describe their quantisation in hf_quant_config.json.
    const fs::path hf = fs::path(file).parent_path() / "hf_quant_config.json";
    if (fs::exists(hf, ec))
        c.quant = parse_quant_config(c.quantization_config, file, read_json_file(hf.string()),
                                     hf.string());
    // A folder of config.json alone (plan from the hub) has no weights to bound the counts by.
    if (uint64_t bytes = weight_file_bytes(fs::path(file).parent_path()); bytes > 0) {
        const std::string prefix = c.multimodal ? "text_config." : "";
        check_config_fits(
            c, bytes,
            {"field " + prefix + "num_hidden_layers", "field " + prefix + "n_routed_experts",
             "field " + prefix + "vocab_size", "", "", "", ""},
            file);
    }
    return c;
}

}  // namespace myriad
