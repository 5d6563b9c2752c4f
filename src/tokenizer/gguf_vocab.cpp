#include "tokenizer/gguf_vocab.h"

#include <fmt/format.h>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad {

namespace {

using Json = nlohmann::ordered_json;

// llama.cpp's token types (llama_token_type).
enum : int64_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
};

Json split(std::string_view pattern) {
    return {{"type", "Split"},
            {"pattern", {{"Regex", std::string(pattern)}}},
            {"behavior", "Isolated"},
            {"invert", false}};
}

Json byte_level(bool use_regex) {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", true},
            {"use_regex", use_regex}};
}

Json sequence(std::initializer_list<std::string_view> patterns) {
    Json list = Json::array();
    for (std::string_view p : patterns) list.push_back(split(p));
    list.push_back(byte_level(false));
    return {{"type", "Sequence"}, {"pretokenizers", std::move(list)}};
}

// Split regexes per pre-tokenizer name, as llama.cpp's llama-vocab.cpp lists them (DeepSeek-V3's
// equal its tokenizer.json, reference.md §4.3; Kimi-K2's is its tiktoken pat_str, §4.1).
constexpr std::string_view kDeepseekV3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// clang-format off (it splits these literals again on every run: it counts bytes, not columns)
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆ"
    "Έ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷ"
    "ᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐ"
    "ῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄ"
    "Ⰰ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-"
    "ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
// clang-format on
constexpr std::string_view kKimi =
    R"([\p{Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const GgufValue& array_of(const GgufModel& m, const char* key, GgufValueType elem, bool numeric) {
    const GgufValue* v = m.find(key);
    if (!v) bad_input("{}: metadata {} is missing (the tokenizer needs it)", m.path(), key);
    const bool ok = v->type == GgufValueType::ARRAY &&
                    (numeric ? v->raw != nullptr && v->elem != GgufValueType::F32 &&
                                   v->elem != GgufValueType::F64
                             : v->elem == elem);
    if (!ok)
        bad_input("{}: metadata {} has type {}, expected an array of {}", m.path(), key,
                  gguf_value_type_name(v->type), numeric ? "integers" : "strings");
    return *v;
}

std::optional<std::string> token_text(const GgufModel& m, const char* id_key) {
    auto id = m.opt_integer(id_key);
    const GgufValue* tokens = m.find("tokenizer.ggml.tokens");
    if (!id || !tokens || tokens->elem != GgufValueType::STRING) return std::nullopt;
    if (*id < 0 || static_cast<uint64_t>(*id) >= tokens->strings.size())
        bad_input("{}: metadata {} = {} is outside the {} tokens", m.path(), id_key, *id,
                  tokens->strings.size());
    return std::string(tokens->strings[static_cast<size_t>(*id)]);
}

}  // namespace

std::optional<Json> gguf_pre_tokenizer(std::string_view pre) {
    if (pre == "deepseek-v3")
        return sequence({R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+", kDeepseekV3Words});
    if (pre == "deepseek-llm")
        return sequence({"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$",
                         "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"});
    if (pre == "deepseek-coder")
        return sequence(
            {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"});
    if (pre == "kimi-k2") return sequence({kKimi});
    if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe") return sequence({kLlama3});
    if (pre == "qwen2" || pre == "deepseek-r1-qwen") return sequence({kQwen2});
    if (pre == "gpt-2" || pre == "default" || pre.empty()) return byte_level(true);
    return std::nullopt;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufModel& m) {
    const std::string& file = m.path();
    const std::string_view model = m.string("tokenizer.ggml.model");
    if (model != "gpt2")
        bad_input(
            "{}: metadata tokenizer.ggml.model is \"{}\"; myriad reads \"gpt2\" (byte-level BPE) "
            "vocabularies",
            file, model.substr(0, 64));
    const std::string_view pre = m.opt_string("tokenizer.ggml.pre").value_or("default");
    auto pre_json = gguf_pre_tokenizer(pre);
    if (!pre_json)
        bad_input(
            "{}: metadata tokenizer.ggml.pre is \"{}\", a pre-tokenizer myriad does not know "
            "(known: deepseek-v3, deepseek-llm, deepseek-coder, kimi-k2, llama3, qwen2, gpt-2)",
            file, pre.substr(0, 64));

    const GgufValue& tokens = array_of(m, "tokenizer.ggml.tokens", GgufValueType::STRING, false);
    const GgufValue* types = m.find("tokenizer.ggml.token_type");
    if (types) types = &array_of(m, "tokenizer.ggml.token_type", GgufValueType::I32, true);
    if (types && types->count != tokens.count)
        bad_input("{}: metadata tokenizer.ggml.token_type has {} entries for {} tokens", file,
                  types->count, tokens.count);
    if (tokens.count == 0 || tokens.count > (uint64_t{1} << 24))
        bad_input("{}: metadata tokenizer.ggml.tokens has {} tokens", file, tokens.count);

    TokenizerJson tj;
    Json added = Json::array();
    for (size_t id = 0; id < tokens.strings.size(); ++id) {
        const std::string_view text = tokens.strings[id];
        if (!utf8::is_valid(text))
            bad_input("{}: metadata tokenizer.ggml.tokens[{}] is not valid UTF-8", file, id);
        const int64_t type = types ? types->integer_at(id) : kNormal;
        if (type == kControl || type == kUserDefined || type == kUnknown) {
            const bool special = type != kUserDefined;
            added.push_back({{"id", id},
                             {"content", std::string(text)},
                             {"special", special},
                             {"normalized", false}});
            continue;
        }
        if (type != kNormal && type != kUnused && type != kByte)
            bad_input(
                "{}: metadata tokenizer.ggml.token_type[{}] is {}, not a llama.cpp token "
                "type (1-6)",
                file, id, type);
        tj.vocab.emplace_back(std::string(text), static_cast<int64_t>(id));
    }
    if (const GgufValue* merges = m.find("tokenizer.ggml.merges")) {
        const GgufValue& mv = array_of(m, "tokenizer.ggml.merges", GgufValueType::STRING, false);
        (void)merges;
        tj.merges.reserve(mv.strings.size());
        for (size_t k = 0; k < mv.strings.size(); ++k) {
            const std::string_view s = mv.strings[k];
            // As llama.cpp: the separator is the first space after the first character.
            const size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string_view::npos;
            if (sp == std::string_view::npos)
                bad_input("{}: metadata tokenizer.ggml.merges[{}] \"{}\" is not \"A B\"", file, k,
                          s.substr(0, 64));
            tj.merges.emplace_back(std::string(s.substr(0, sp)), std::string(s.substr(sp + 1)));
        }
    }
    tj.root = {{"model", {{"type", "BPE"}}},
               {"pre_tokenizer", std::move(*pre_json)},
               {"decoder", {{"type", "ByteLevel"}}},
               {"added_tokens", std::move(added)}};

    TokenizerConfig config;
    config.bos_token = token_text(m, "tokenizer.ggml.bos_token_id");
    config.eos_token = token_text(m, "tokenizer.ggml.eos_token_id");
    config.add_bos_token = m.opt_bool("tokenizer.ggml.add_bos_token").value_or(false);
    config.add_eos_token = m.opt_bool("tokenizer.ggml.add_eos_token").value_or(false);
    return std::make_unique<HfTokenizer>(std::move(tj), config, file,
                                         static_cast<int64_t>(tokens.count));
}

std::vector<std::pair<std::string, std::string>> gguf_chat_templates(const GgufModel& m) {
    std::vector<std::pair<std::string, std::string>> out;
    if (auto t = m.opt_string("tokenizer.chat_template")) out.emplace_back("default", *t);
    constexpr std::string_view kNamed = "tokenizer.chat_template.";
    for (const auto& [key, value] : m.metadata())
        if (key.starts_with(kNamed) && value.type == GgufValueType::STRING)
            out.emplace_back(key.substr(kNamed.size()), std::string(value.str));
    return out;
}

Json gguf_special_tokens(const GgufModel& m) {
    Json out = Json::object();
    for (auto [name, key] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                             std::pair{"eos_token", "tokenizer.ggml.eos_token_id"},
                             std::pair{"unk_token", "tokenizer.ggml.unknown_token_id"},
                             std::pair{"pad_token", "tokenizer.ggml.padding_token_id"}})
        if (auto text = token_text(m, key)) out[name] = *text;
    return out;
}

}  // namespace myriad
