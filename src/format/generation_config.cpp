#include "format/generation_config.h"

#include <filesystem>

#include <fmt/format.h>

#include "format/json_fields.h"
#include "format/json_file.h"

namespace myriad {

GenerationConfig load_generation_config(const std::string& dir) {
    GenerationConfig config;
    const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return config;

    const nlohmann::ordered_json json = read_json_file(path);
    const JsonFields fields(json, path);
    // eos_token_id: one id or a list of ids (Llama-3 style); null means none.
    if (const auto* eos = fields.find("eos_token_id"); eos != nullptr && !eos->is_null()) {
        if (eos->is_array()) {
            for (size_t i = 0; i < eos->size(); ++i)
                config.eos_token_ids.push_back(
                    fields.as_integer((*eos)[i], fmt::format("eos_token_id[{}]", i)));
        } else {
            config.eos_token_ids.push_back(fields.as_integer(*eos, "eos_token_id"));
        }
        for (int64_t id : config.eos_token_ids)
            if (id < 0) fields.fail("eos_token_id", fmt::format("holds a negative id {}", id));
    }
    config.bos_token_id = fields.opt_integer("bos_token_id");
    config.pad_token_id = fields.opt_integer("pad_token_id");
    config.do_sample = fields.opt_boolean("do_sample");
    config.temperature = fields.opt_number("temperature");
    config.top_p = fields.opt_number("top_p");
    config.min_p = fields.opt_number("min_p");
    config.repetition_penalty = fields.opt_number("repetition_penalty");
    config.top_k = fields.opt_integer("top_k");
    config.max_new_tokens = fields.opt_integer("max_new_tokens");

    // Ranges the sampler relies on; a value outside them is a typo the user should see.
    auto check = [&](std::string_view name, bool ok, auto value, std::string_view range) {
        if (!ok) fields.fail(name, fmt::format("is {}, expected {}", value, range));
    };
    if (auto v = config.bos_token_id) check("bos_token_id", *v >= 0, *v, "a token id >= 0");
    if (auto v = config.temperature) check("temperature", *v >= 0.0, *v, "a value >= 0");
    if (auto v = config.top_p) check("top_p", *v >= 0.0 && *v <= 1.0, *v, "a value in [0, 1]");
    if (auto v = config.min_p) check("min_p", *v >= 0.0 && *v <= 1.0, *v, "a value in [0, 1]");
    if (auto v = config.repetition_penalty)
        check("repetition_penalty", *v > 0.0, *v, "a value > 0");
    if (auto v = config.top_k) check("top_k", *v >= 0, *v, "a value >= 0 (0: no limit)");
    if (auto v = config.max_new_tokens) check("max_new_tokens", *v > 0, *v, "a value > 0");
    return config;
}

}  // namespace myriad
