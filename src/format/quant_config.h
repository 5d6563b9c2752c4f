// Quantisation configuration of a checkpoint (reference.md §2): ModelOpt NVFP4 from
// hf_quant_config.json (legacy) or config.json's quantization_config (quant_method modelopt),
// DeepSeek FP8 blocks (quant_method fp8), compressed-tensors INT4 pack-quantized. Decides which
// linear modules are quantised; the model layer turns that into expected tensors.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace myriad {

enum class QuantMethod : uint8_t { None, ModelOptNvfp4, Fp8Block, CompressedInt4 };

std::string_view quant_method_name(QuantMethod m);

struct QuantConfig {
    QuantMethod method = QuantMethod::None;
    std::string source;  // the file (and field) it came from, for messages
    // Modules that stay dense: fnmatch globs ("*" matches dots too; a trailing "name*" means
    // "name" or "name.*", as vLLM), exact names and their parents, or "re:" regexes matched from
    // the start (compressed-tensors).
    std::vector<std::string> ignore;
    // compressed-tensors config_groups targets: "Linear" (every linear) or patterns as above.
    std::vector<std::string> targets;
    int64_t group_size = 0;                      // NVFP4 16, INT4 32
    int64_t block_rows = 128, block_cols = 128;  // FP8 weight_block_size
    bool kv_cache_fp8 = false;   // kv_cache_quant_algo FP8 / kv_cache_scheme float 8 bits
    std::string kv_cache_field;  // the field that said so, for messages

    // Whether a linear module (a tensor name without ".weight") is quantised. `spellings`: its
    // names (e.g. with and without a "language_model." prefix); any of them may be ignored or
    // targeted. `in_layers`: it sits inside a decoder layer (DeepSeek FP8 quantises only those).
    bool quantizes(std::initializer_list<std::string_view> spellings, bool in_layers) const;
};

// One ignore/target pattern against a module name, as QuantConfig::ignore describes. Throws bad
// input naming `where` (file and field) for a bad regex.
bool module_pattern_matches(std::string_view pattern, std::string_view module,
                            std::string_view where = "quantization config");

// From config.json's quantization_config (null when absent, `config_path` names it) and the
// parsed hf_quant_config.json (null when absent, `hf_path` names it). Malformed or unsupported
// configs are bad input naming the file and the field.
QuantConfig parse_quant_config(const nlohmann::ordered_json& quantization_config,
                               const std::string& config_path,
                               const nlohmann::ordered_json& hf_quant_config,
                               const std::string& hf_path);

}  // namespace myriad
