#include "tokenizer/tokenizer_config.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "format/json_fields.h"
#include "format/json_file.h"
#include "util/error.h"

namespace myriad {

namespace {

// "bos_token": "<s>" or {"__type": "AddedToken", "content": "<s>", ...} or null.
std::optional<std::string> token_name(const JsonFields& f, std::string_view name) {
    const auto* v = f.find(name);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_string()) return v->get<std::string>();
    if (v->is_object()) {
        JsonFields t(*v, f.source(), f.field_name(name) + ".");
        return t.string("content");
    }
    f.fail(name,
           fmt::format("has type {}, expected string or AddedToken object", json_type_name(*v)));
}

}  // namespace

TokenizerConfig parse_tokenizer_config(const nlohmann::ordered_json& j, const std::string& source) {
    JsonFields f(j, source);
    TokenizerConfig c;
    c.bos_token = token_name(f, "bos_token");
    c.eos_token = token_name(f, "eos_token");
    c.add_bos_token = f.opt_boolean("add_bos_token").value_or(false);
    c.add_eos_token = f.opt_boolean("add_eos_token").value_or(false);
    c.pat_str = f.opt_string("pat_str");
    if (const auto* d = f.find("added_tokens_decoder"); d != nullptr && !d->is_null()) {
        if (!d->is_object()) f.fail("added_tokens_decoder", "must be an object of id: token");
        for (const auto& [key, value] : d->items()) {
            std::string field = "added_tokens_decoder." + key;
            int64_t id = -1;
            auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
            if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > INT32_MAX)
                bad_input("{}: field {}: the key must be a token id", source, field);
            JsonFields t(value, source, field + ".");
            AddedToken a;
            a.id = static_cast<TokenId>(id);
            a.content = t.string("content");
            a.special = t.opt_boolean("special").value_or(false);
            a.lstrip = t.opt_boolean("lstrip").value_or(false);
            a.rstrip = t.opt_boolean("rstrip").value_or(false);
            a.single_word = t.opt_boolean("single_word").value_or(false);
            a.normalized = t.opt_boolean("normalized").value_or(!a.special);
            c.added_tokens_decoder.push_back(std::move(a));
        }
        std::sort(c.added_tokens_decoder.begin(), c.added_tokens_decoder.end(),
                  [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    }
    return c;
}

TokenizerConfig read_tokenizer_config(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return {};
    return parse_tokenizer_config(read_json_file(path), path);
}

}  // namespace myriad
