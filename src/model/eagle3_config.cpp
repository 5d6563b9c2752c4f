#include "model/eagle3_config.h"

#include <algorithm>
#include <cmath>

#include "format/json_fields.h"
#include "format/json_file.h"
#include "util/error.h"

namespace myriad {

namespace {

// The architectures whose layer is the one this forward computes (vLLM's names for it).
bool llama_eagle3(const std::string& arch) {
    return arch == "LlamaForCausalLMEagle3" || arch == "Eagle3LlamaForCausalLM";
}

void read_rope(const JsonFields& f, Eagle3Config& c) {
    c.rope_theta = f.opt_number("rope_theta").value_or(10000.0);
    if (c.rope_theta <= 1) f.fail("rope_theta", "must be greater than 1");
    const nlohmann::ordered_json* rs = f.find("rope_scaling");
    if (!rs || rs->is_null()) return;
    const JsonFields s(*rs, f.source(), "rope_scaling.");
    std::string type = s.opt_string("rope_type").value_or(s.opt_string("type").value_or("default"));
    if (type == "default") return;
    c.rope_factor = s.positive_number("factor");
    if (type == "llama3") {
        c.rope = Eagle3Rope::Llama3;
        c.low_freq_factor = s.positive_number("low_freq_factor");
        c.high_freq_factor = s.positive_number("high_freq_factor");
        if (c.high_freq_factor <= c.low_freq_factor)
            s.fail("high_freq_factor", "must be greater than low_freq_factor");
        c.original_max_position_embeddings = s.positive_integer("original_max_position_embeddings");
    } else if (type == "yarn") {
        c.rope = Eagle3Rope::Yarn;
        c.beta_fast = s.opt_number("beta_fast").value_or(32.0);
        c.beta_slow = s.opt_number("beta_slow").value_or(1.0);
        c.mscale = s.opt_number("mscale").value_or(0.0);
        c.mscale_all_dim = s.opt_number("mscale_all_dim").value_or(0.0);
        c.attention_factor = s.opt_number("attention_factor").value_or(0.0);
        const std::optional<int64_t> orig = s.opt_integer("original_max_position_embeddings");
        c.original_max_position_embeddings =
            orig ? *orig : f.positive_integer("max_position_embeddings");
        if (c.original_max_position_embeddings <= 0)
            s.fail("original_max_position_embeddings", "must be positive");
    } else {
        s.fail(s.find("rope_type") ? "rope_type" : "type",
               fmt::format("is {:?}; an EAGLE3 draft's rope is default, llama3 or yarn", type));
    }
}

}  // namespace

Eagle3Config read_eagle3_config(const std::string& dir) {
    Eagle3Config c;
    c.path = dir;
    c.file = dir + "/config.json";
    const nlohmann::ordered_json j = read_json_file(c.file);
    const JsonFields f(j, c.file);
    const nlohmann::ordered_json* arch = f.find("architectures");
    if (!arch || !arch->is_array() || arch->empty() || !(*arch)[0].is_string())
        f.fail("architectures", "must name the draft's architecture (LlamaForCausalLMEagle3)");
    const std::string name = (*arch)[0].get<std::string>();
    if (!llama_eagle3(name))
        f.fail("architectures",
               fmt::format("is {:?}; --speculative eagle3 reads LlamaForCausalLMEagle3 drafts (one "
                           "Llama decoder layer; MLA and speculators-format drafts are not read)",
                           printable(name)));
    c.hidden_size = f.positive_integer("hidden_size");
    c.num_attention_heads = f.positive_integer("num_attention_heads");
    c.num_key_value_heads = f.opt_integer("num_key_value_heads").value_or(c.num_attention_heads);
    if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0)
        f.fail("num_key_value_heads", fmt::format("is {}; it must divide num_attention_heads ({})",
                                                  c.num_key_value_heads, c.num_attention_heads));
    if (f.has("head_dim")) {
        c.head_dim = f.positive_integer("head_dim");
    } else {
        if (c.hidden_size % c.num_attention_heads != 0)
            f.fail("head_dim", "is missing and hidden_size is not a multiple of the heads");
        c.head_dim = c.hidden_size / c.num_attention_heads;
    }
    if (c.head_dim % 2 != 0) f.fail("head_dim", "must be even (rotary pairs)");
    c.intermediate_size = f.positive_integer("intermediate_size");
    c.rms_norm_eps = f.positive_number("rms_norm_eps");
    c.vocab_size = f.positive_integer("vocab_size");
    c.draft_vocab_size = f.opt_integer("draft_vocab_size").value_or(c.vocab_size);
    if (c.draft_vocab_size <= 0 || c.draft_vocab_size > c.vocab_size)
        f.fail("draft_vocab_size", fmt::format("is {}; it must be in [1, vocab_size = {}]",
                                               c.draft_vocab_size, c.vocab_size));
    c.target_hidden_size = f.opt_integer("target_hidden_size").value_or(c.hidden_size);
    if (c.target_hidden_size <= 0) f.fail("target_hidden_size", "must be positive");
    c.norm_before_residual = f.opt_boolean("norm_before_residual").value_or(false);
    if (f.opt_boolean("norm_before_fc").value_or(false))
        f.fail("norm_before_fc", "is true; myriad's EAGLE3 forward has no norm before fc");
    const std::string act = f.opt_string("hidden_act").value_or("silu");
    if (act != "silu") f.fail("hidden_act", fmt::format("is {:?}; EAGLE3's MLP is silu", act));
    if (f.opt_integer("num_hidden_layers").value_or(1) != 1)
        f.fail("num_hidden_layers", "must be 1 (an EAGLE3 draft is one decoder layer)");
    read_rope(f, c);

    // The aux layer ids: top level (speculators, vLLM) or inside eagle_config (SpecForge).
    const nlohmann::ordered_json* ids = f.find("eagle_aux_hidden_state_layer_ids");
    std::string field = "eagle_aux_hidden_state_layer_ids";
    if (!ids || ids->is_null()) {
        if (const nlohmann::ordered_json* ec = f.find("eagle_config"); ec && !ec->is_null()) {
            if (!ec->is_object()) f.fail("eagle_config", "must be an object");
            ids = ec->contains(field) ? &(*ec)[field] : nullptr;
            field = "eagle_config." + field;
        }
    }
    if (ids && !ids->is_null()) {
        if (!ids->is_array() || ids->empty())
            bad_input("{}: field {} must be a list of target layer ids", c.file, field);
        for (const auto& v : *ids) c.aux_layer_ids.push_back(f.as_integer(v, field));
    }
    return c;
}

std::vector<int64_t> eagle3_aux_layers(const Eagle3Config& c, int64_t target_layers) {
    std::vector<int64_t> ids = c.aux_layer_ids;
    if (ids.empty()) ids = {2, target_layers / 2, target_layers - 3};  // vLLM's default
    for (int64_t id : ids)
        if (id < 0 || id >= target_layers)
            bad_input(
                "{}: eagle_aux_hidden_state_layer_ids holds {} (default: 2, L/2, L-3); the target "
                "has {} layers, so each id must be in [0, {}]",
                c.file, id, target_layers, target_layers - 1);
    return ids;
}

void check_eagle3_target(const Eagle3Config& c, const ModelConfig& t) {
    if (c.vocab_size != t.vocab_size)
        bad_input(
            "{}: field vocab_size is {}, the target {} has {} tokens; use the draft made for "
            "this model",
            c.file, c.vocab_size, t.path, t.vocab_size);
    if (c.target_hidden_size != t.hidden_size)
        bad_input(
            "{}: field {} is {}, the target {} has hidden_size {}; use the draft made for "
            "this model",
            c.file, c.target_hidden_size == c.hidden_size ? "hidden_size" : "target_hidden_size",
            c.target_hidden_size, t.path, t.hidden_size);
}

Eagle3RopeTable eagle3_rope_table(const Eagle3Config& c) {
    const int64_t half = c.head_dim / 2;
    const double dim = static_cast<double>(c.head_dim), base = c.rope_theta;
    Eagle3RopeTable t;
    std::vector<double> f(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        f[static_cast<size_t>(i)] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
    if (c.rope == Eagle3Rope::Llama3) {
        // Long wavelengths divided by the factor, short ones kept, a smooth blend between.
        const double old_len = static_cast<double>(c.original_max_position_embeddings);
        const double low_wl = old_len / c.low_freq_factor, high_wl = old_len / c.high_freq_factor;
        for (double& v : f) {
            const double wl = 2 * M_PI / v;
            if (wl > low_wl) {
                v /= c.rope_factor;
            } else if (wl >= high_wl) {
                const double s =
                    (old_len / wl - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
                v = (1 - s) * v / c.rope_factor + s * v;
            }
        }
    } else if (c.rope == Eagle3Rope::Yarn) {
        auto mscale = [](double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0; };
        const double orig = static_cast<double>(c.original_max_position_embeddings);
        auto correction_dim = [&](double rotations) {
            return dim * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(base));
        };
        double low = std::max(std::floor(correction_dim(c.beta_fast)), 0.0);
        double high = std::min(std::ceil(correction_dim(c.beta_slow)), dim - 1);
        if (low == high) high += 0.001;
        for (int64_t i = 0; i < half; ++i) {
            const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
            const double extrapolation = 1 - ramp;
            double& v = f[static_cast<size_t>(i)];
            v = v / c.rope_factor * (1 - extrapolation) + v * extrapolation;
        }
        double af = c.attention_factor;
        if (af <= 0)
            af = c.mscale != 0 && c.mscale_all_dim != 0
                     ? mscale(c.rope_factor, c.mscale) / mscale(c.rope_factor, c.mscale_all_dim)
                     : mscale(c.rope_factor, 1.0);
        t.attention_factor = static_cast<float>(af);
    }
    for (double v : f) t.inv_freq.push_back(static_cast<float>(v));
    return t;
}

}  // namespace myriad
