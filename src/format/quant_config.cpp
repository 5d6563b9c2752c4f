#include "format/quant_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "format/json_fields.h"
#include "util/error.h"

namespace myriad {

using Json = nlohmann::ordered_json;

std::string_view quant_method_name(QuantMethod m) {
    switch (m) {
        case QuantMethod::None:
            return "none";
        case QuantMethod::ModelOptNvfp4:
            return "ModelOpt NVFP4";
        case QuantMethod::Fp8Block:
            return "FP8 block";
        case QuantMethod::CompressedInt4:
            return "compressed-tensors INT4";
    }
    return "?";
}

bool module_pattern_matches(std::string_view pattern, std::string_view module,
                            std::string_view field) {
    if (pattern.starts_with("re:")) {
        try {
            std::regex re(std::string(pattern.substr(3)));
            const std::string m(module);
            return std::regex_search(m, re, std::regex_constants::match_continuous);
        } catch (const std::regex_error& e) {
            bad_input("{}: \"{}\" is not a valid regular expression ({})", field, pattern,
                      e.what());
        }
    }
    if (module == pattern) return true;
    // A parent module's name covers its children: "model.layers.0.mlp" covers its gate_proj.
    if (module.size() > pattern.size() && module.starts_with(pattern) &&
        module[pattern.size()] == '.')
        return true;
    const std::string p(pattern), m(module);
    if (p.size() >= 2 && p.back() == '*' && p[p.size() - 2] != '.') {
        // vLLM: "name*" excludes "name" and "name.*", not "name2".
        const std::string stem = p.substr(0, p.size() - 1);
        return fnmatch(stem.c_str(), m.c_str(), 0) == 0 ||
               fnmatch((stem + ".*").c_str(), m.c_str(), 0) == 0;
    }
    return fnmatch(p.c_str(), m.c_str(), 0) == 0;
}

bool QuantConfig::quantizes(std::initializer_list<std::string_view> spellings,
                            bool in_layers) const {
    if (method == QuantMethod::None) return false;
    if (method == QuantMethod::Fp8Block && !in_layers) return false;  // embeddings, lm_head
    for (std::string_view module : spellings)
        for (const auto& p : ignore)
            if (module_pattern_matches(p, module, source)) return false;
    if (targets.empty()) return true;
    for (std::string_view module : spellings)
        for (const auto& t : targets)
            if (t == "Linear" || module_pattern_matches(t, module, source)) return true;
    return false;
}

namespace {

std::vector<std::string> string_list(const JsonFields& f, std::string_view name, bool required) {
    const Json* v = f.find(name);
    if (v == nullptr || v->is_null()) {
        if (required) f.fail(name, "is missing (a list of module names, may be empty)");
        return {};
    }
    if (!v->is_array())
        f.fail(name,
               fmt::format("has type {}, expected a list of module names", json_type_name(*v)));
    std::vector<std::string> out;
    for (const auto& e : *v) {
        if (!e.is_string())
            f.fail(name,
                   fmt::format("has an element of type {}, expected strings", json_type_name(e)));
        out.push_back(e.get<std::string>());
        if (out.back().starts_with("re:"))  // a bad regex fails here, not at the first lookup
            module_pattern_matches(out.back(), "", f.source() + ": field " + f.field_name(name));
    }
    return out;
}

std::string upper(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

// kv_cache_scheme: null, or {"num_bits": 8, "type": "float", ...} = FP8 KV.
void read_kv_cache_scheme(const JsonFields& f, QuantConfig& q) {
    const Json* v = f.find("kv_cache_scheme");
    if (v == nullptr || v->is_null()) return;
    JsonFields kv(*v, f.source(), f.field_name("kv_cache_scheme") + ".");
    const int64_t bits = kv.integer("num_bits");
    const std::string type = kv.string("type");
    if (bits != 8 || type != "float")
        kv.fail("num_bits", fmt::format("is {} with type \"{}\"; the KV cache schemes myriad "
                                        "reads are FP8 (num_bits 8, type float) or none",
                                        bits, type));
    q.kv_cache_fp8 = true;
    q.kv_cache_field = f.source() + ": " + f.field_name("kv_cache_scheme");
}

void read_kv_cache_algo(const JsonFields& f, QuantConfig& q) {
    auto algo = f.opt_string("kv_cache_quant_algo");
    if (!algo) return;
    if (upper(*algo) != "FP8")
        f.fail(
            "kv_cache_quant_algo",
            fmt::format("is \"{}\"; the KV cache algorithm myriad reads is FP8 (or null)", *algo));
    q.kv_cache_fp8 = true;
    q.kv_cache_field = f.source() + ": " + f.field_name("kv_cache_quant_algo");
}

void require_nvfp4(const JsonFields& f, std::string_view field, const std::string& algo) {
    if (upper(algo) != "NVFP4")
        f.fail(field, fmt::format("is \"{}\"; the ModelOpt algorithm myriad reads is NVFP4", algo));
}

void require_group_16(const JsonFields& f, std::string_view field, int64_t g) {
    if (g != 16) f.fail(field, fmt::format("is {}; NVFP4 uses blocks of 16 inputs", g));
}

// hf_quant_config.json: {"producer": ..., "quantization": {"quant_algo": "NVFP4", "group_size":
// 16, "kv_cache_quant_algo": ..., "exclude_modules": [...]}}; vLLM requires all four keys.
QuantConfig parse_hf_quant_config(const Json& j, const std::string& path) {
    JsonFields top(j, path);
    const Json* qv = top.find("quantization");
    if (qv == nullptr || qv->is_null()) top.fail("quantization", "is missing");
    JsonFields f(*qv, path, "quantization.");
    QuantConfig q;
    q.method = QuantMethod::ModelOptNvfp4;
    q.source = path;
    require_nvfp4(f, "quant_algo", f.string("quant_algo"));
    q.group_size = f.integer("group_size");
    require_group_16(f, "group_size", q.group_size);
    if (f.find("kv_cache_quant_algo") == nullptr)
        f.fail("kv_cache_quant_algo", "is missing (null or \"FP8\")");
    read_kv_cache_algo(f, q);
    q.ignore = string_list(f, "exclude_modules", true);
    return q;
}

// config.json quantization_config with quant_method modelopt.
QuantConfig parse_modelopt(const JsonFields& f) {
    QuantConfig q;
    q.method = QuantMethod::ModelOptNvfp4;
    q.source = f.source();
    if (auto algo = f.opt_string("quant_algo")) {
        require_nvfp4(f, "quant_algo", *algo);
    } else if (const Json* nested = f.find("quantization"); nested && !nested->is_null()) {
        JsonFields n(*nested, f.source(), f.field_name("quantization") + ".");
        require_nvfp4(n, "quant_algo", n.string("quant_algo"));
        q.ignore = string_list(n, "exclude_modules", false);
    } else {
        f.fail("quant_algo", "is missing");
    }
    q.group_size = f.opt_integer("group_size").value_or(16);
    if (const Json* groups = f.find("config_groups"); groups && !groups->is_null()) {
        if (!groups->is_object()) f.fail("config_groups", "is not an object");
        for (const auto& [name, g] : groups->items()) {
            JsonFields gf(g, f.source(), f.field_name("config_groups") + "." + name + ".");
            if (const Json* w = gf.find("weights"); w && !w->is_null()) {
                JsonFields wf(*w, f.source(), gf.field_name("weights") + ".");
                if (auto gs = wf.opt_integer("group_size")) {
                    require_group_16(wf, "group_size", *gs);
                    q.group_size = *gs;
                }
            }
        }
    }
    require_group_16(f, "group_size", q.group_size);
    auto ignore = string_list(f, "ignore", false);
    auto exclude = string_list(f, "exclude_modules", false);
    q.ignore.insert(q.ignore.end(), ignore.begin(), ignore.end());
    q.ignore.insert(q.ignore.end(), exclude.begin(), exclude.end());
    read_kv_cache_scheme(f, q);
    read_kv_cache_algo(f, q);
    return q;
}

// DeepSeek: {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], ...}.
QuantConfig parse_fp8(const JsonFields& f) {
    QuantConfig q;
    q.method = QuantMethod::Fp8Block;
    q.source = f.source();
    const std::string fmt_name = f.string("fmt");
    if (fmt_name != "e4m3")
        f.fail("fmt",
               fmt::format("is \"{}\"; FP8 block weights are float8_e4m3fn (\"e4m3\")", fmt_name));
    const Json* bs = f.find("weight_block_size");
    if (bs == nullptr || bs->is_null())
        f.fail("weight_block_size",
               "is missing (per-tensor FP8 is not supported; expected "
               "[128, 128])");
    if (!bs->is_array() || bs->size() != 2)
        f.fail("weight_block_size", "must be a list of two block sizes, e.g. [128, 128]");
    q.block_rows = f.as_integer((*bs)[0], "weight_block_size");
    q.block_cols = f.as_integer((*bs)[1], "weight_block_size");
    if (q.block_rows <= 0 || q.block_cols <= 0)
        f.fail("weight_block_size", fmt::format("is [{}, {}]; block sizes must be positive",
                                                q.block_rows, q.block_cols));
    if (auto act = f.opt_string("activation_scheme"); act && *act != "dynamic" && *act != "static")
        f.fail("activation_scheme", fmt::format("is \"{}\", expected dynamic or static", *act));
    for (const char* key : {"modules_to_not_convert", "ignored_layers", "ignore"}) {
        auto list = string_list(f, key, false);
        q.ignore.insert(q.ignore.end(), list.begin(), list.end());
    }
    read_kv_cache_scheme(f, q);
    return q;
}

// compressed-tensors pack-quantized INT4 (Kimi-K2-Thinking / K2.5, reference.md §2.4).
QuantConfig parse_compressed_tensors(const JsonFields& f) {
    QuantConfig q;
    q.method = QuantMethod::CompressedInt4;
    q.source = f.source();
    const std::string format = f.opt_string("format").value_or("");
    const Json* groups = f.find("config_groups");
    if (groups == nullptr || groups->is_null()) f.fail("config_groups", "is missing");
    if (!groups->is_object() || groups->empty())
        f.fail("config_groups", "must be an object of at least one quantisation group");
    for (const auto& [name, g] : groups->items()) {
        JsonFields gf(g, f.source(), f.field_name("config_groups") + "." + name + ".");
        const std::string gformat = gf.opt_string("format").value_or(format);
        if (gformat != "pack-quantized")
            gf.fail("format", fmt::format("is \"{}\"; the compressed-tensors format myriad reads "
                                          "is pack-quantized (INT4)",
                                          gformat));
        if (const Json* a = gf.find("input_activations"); a && !a->is_null())
            gf.fail("input_activations", "is set; only weight-only INT4 (W4A16) is supported");
        const Json* wv = gf.find("weights");
        if (wv == nullptr || wv->is_null()) gf.fail("weights", "is missing");
        JsonFields w(*wv, f.source(), gf.field_name("weights") + ".");
        if (const int64_t bits = w.integer("num_bits"); bits != 4)
            w.fail("num_bits",
                   fmt::format("is {}; pack-quantized weights myriad reads are 4-bit", bits));
        if (const std::string type = w.string("type"); type != "int")
            w.fail("type", fmt::format("is \"{}\", expected \"int\"", type));
        if (!w.boolean("symmetric")) w.fail("symmetric", "is false; only symmetric INT4 is read");
        if (auto strategy = w.opt_string("strategy"); strategy && *strategy != "group")
            w.fail("strategy", fmt::format("is \"{}\", expected \"group\"", *strategy));
        const int64_t gs = w.positive_integer("group_size");
        if (gs % 8 != 0) w.fail("group_size", fmt::format("is {}, not a multiple of 8", gs));
        if (q.group_size != 0 && q.group_size != gs)
            w.fail("group_size", fmt::format("is {} but another group uses {}", gs, q.group_size));
        q.group_size = gs;
        auto targets = string_list(gf, "targets", true);
        q.targets.insert(q.targets.end(), targets.begin(), targets.end());
    }
    q.ignore = string_list(f, "ignore", false);
    read_kv_cache_scheme(f, q);
    return q;
}

QuantConfig parse_config_json(const Json& qc, const std::string& path) {
    JsonFields f(qc, path, "quantization_config.");
    const std::string method = f.string("quant_method");
    if (method == "modelopt") return parse_modelopt(f);
    if (method == "fp8") return parse_fp8(f);
    if (method == "compressed-tensors") return parse_compressed_tensors(f);
    f.fail("quant_method", fmt::format("is \"{}\"; myriad reads modelopt (NVFP4), fp8 (DeepSeek "
                                       "blocks) and compressed-tensors (INT4 pack-quantized)",
                                       method));
}

}  // namespace

QuantConfig parse_quant_config(const Json& quantization_config, const std::string& config_path,
                               const Json& hf_quant_config, const std::string& hf_path) {
    const bool has_config = !quantization_config.is_null();
    const bool has_hf = !hf_quant_config.is_null();
    if (!has_config && !has_hf) return {};
    if (!has_hf) return parse_config_json(quantization_config, config_path);
    QuantConfig hf = parse_hf_quant_config(hf_quant_config, hf_path);
    if (has_config) {
        // Both files: they must describe the same ModelOpt export.
        QuantConfig c = parse_config_json(quantization_config, config_path);
        if (c.method != hf.method)
            bad_input("{}: field quantization_config.quant_method says {} but {} says {}",
                      config_path, quant_method_name(c.method), hf_path,
                      quant_method_name(hf.method));
    }
    return hf;
}

}  // namespace myriad
