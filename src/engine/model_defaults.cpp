#include "engine/model_defaults.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "format/generation_config.h"
#include "util/error.h"

namespace myriad {

namespace {

// tokenizer_config.json's eos_token (a string or {"content": ...}) looked up in its
// added_tokens_decoder; nothing when either is absent.
std::vector<TokenId> tokenizer_config_eos(const std::string& dir) {
    const std::string path = dir + "/tokenizer_config.json";
    if (!std::filesystem::exists(path)) return {};
    std::ifstream in(path);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) bad_input("{}: not a JSON object", path);
    std::string eos;
    if (auto it = j.find("eos_token"); it != j.end()) {
        if (it->is_string())
            eos = it->get<std::string>();
        else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
            eos = (*it)["content"].get<std::string>();
    }
    if (eos.empty() || !j.contains("added_tokens_decoder") ||
        !j["added_tokens_decoder"].is_object())
        return {};
    for (const auto& [id, tok] : j["added_tokens_decoder"].items()) {
        if (tok.is_object() && tok.value("content", "") == eos) {
            try {
                return {static_cast<TokenId>(std::stoll(id))};
            } catch (...) {
                bad_input("{}: added_tokens_decoder key '{}' is not a token id", path, id);
            }
        }
    }
    return {};
}

}  // namespace

ModelDefaults load_model_defaults(const std::string& dir, const ModelConfig& config) {
    ModelDefaults d;
    GenerationConfig g = load_generation_config(dir);
    auto add = [&](int64_t id) {
        if (std::find(d.eos_ids.begin(), d.eos_ids.end(), id) == d.eos_ids.end())
            d.eos_ids.push_back(static_cast<TokenId>(id));
    };
    for (int64_t id : g.eos_token_ids) add(id);
    if (g.eos_token_ids.empty())
        for (int64_t id : config.eos_token_ids) add(id);
    for (TokenId id : tokenizer_config_eos(dir)) add(id);
    d.sampling.temperature = g.temperature;
    d.sampling.top_p = g.top_p;
    d.sampling.top_k = g.top_k;
    d.sampling.min_p = g.min_p;
    d.sampling.repetition_penalty = g.repetition_penalty;
    return d;
}

}  // namespace myriad
