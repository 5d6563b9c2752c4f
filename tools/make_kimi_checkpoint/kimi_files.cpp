#include "kimi_files.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "format/json_file.h"
#include "util/error.h"

namespace myriad::tools {

namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) internal_error("{}: write failed", path);
}

int64_t integer(const nlohmann::ordered_json& j, const char* key, const std::string& source) {
    if (!j.contains(key) || !j[key].is_number_integer())
        bad_input("{}: {} is missing or not an integer", source, key);
    return j[key].get<int64_t>();
}

// Kimi-K2's named special tokens by id (reference.md §4.1); the other ids of the 256 are
// <|reserved_token_{id}|>, as tokenization_kimi.py names them.
const std::map<int64_t, const char*>& special_names() {
    static const std::map<int64_t, const char*> names = {
        {163584, "[BOS]"},
        {163585, "[EOS]"},
        {163586, "<|im_end|>"},
        {163587, "<|im_user|>"},
        {163588, "<|im_assistant|>"},
        {163590, "<|start_header_id|>"},
        {163591, "<|end_header_id|>"},
        {163593, "[EOT]"},
        {163594, "<|im_system|>"},
        {163595, "<|tool_calls_section_begin|>"},
        {163596, "<|tool_calls_section_end|>"},
        {163597, "<|tool_call_begin|>"},
        {163598, "<|tool_call_argument_begin|>"},
        {163599, "<|tool_call_end|>"},
        {163601, "<|im_middle|>"},
        {163602, "<|media_begin|>"},
        {163603, "<|media_content|>"},
        {163604, "<|media_end|>"},
        {163605, "<|media_pad|>"},
        {163606, "<think>"},
        {163607, "</think>"},
        {163838, "[UNK]"},
        {163839, "[PAD]"},
    };
    return names;
}

}  // namespace

KimiShape shape_of_config(const std::string& config_path) {
    const nlohmann::ordered_json c = read_json_file(config_path);
    if (!c.contains("text_config") || !c["text_config"].is_object())
        bad_input("{}: no text_config object (expected the Kimi-K2.5 outer config)", config_path);
    const auto& t = c["text_config"];
    const std::string src = config_path + ": text_config";
    KimiShape s;
    s.vocab = integer(t, "vocab_size", src);
    s.hidden = integer(t, "hidden_size", src);
    s.intermediate = integer(t, "intermediate_size", src);
    s.moe_intermediate = integer(t, "moe_intermediate_size", src);
    s.layers = integer(t, "num_hidden_layers", src);
    s.first_dense = integer(t, "first_k_dense_replace", src);
    s.heads = integer(t, "num_attention_heads", src);
    s.q_lora_rank = integer(t, "q_lora_rank", src);
    s.kv_lora_rank = integer(t, "kv_lora_rank", src);
    s.qk_nope = integer(t, "qk_nope_head_dim", src);
    s.qk_rope = integer(t, "qk_rope_head_dim", src);
    s.v_head = integer(t, "v_head_dim", src);
    s.experts = integer(t, "n_routed_experts", src);
    s.shared_experts = integer(t, "n_shared_experts", src);
    if (c.contains("vision_config")) {
        const auto& v = c["vision_config"];
        s.vision_hidden = integer(v, "hidden_size", config_path + ": vision_config");
        s.vision_blocks = integer(v, "num_hidden_layers", config_path + ": vision_config");
        s.patch = integer(v, "patch_size", config_path + ": vision_config");
    }
    return s;
}

void write_configs(const std::string& config_dir, const KimiShape& s, int64_t experts_per_tok,
                   const std::string& out) {
    const std::string src = (fs::path(config_dir) / "config.json").string();
    nlohmann::ordered_json c = read_json_file(src);
    auto& t = c["text_config"];
    t["vocab_size"] = s.vocab;
    t["hidden_size"] = s.hidden;
    t["intermediate_size"] = s.intermediate;
    t["moe_intermediate_size"] = s.moe_intermediate;
    t["num_hidden_layers"] = s.layers;
    t["first_k_dense_replace"] = s.first_dense;
    t["num_attention_heads"] = s.heads;
    t["num_key_value_heads"] = s.heads;
    t["q_lora_rank"] = s.q_lora_rank;
    t["kv_lora_rank"] = s.kv_lora_rank;
    t["qk_nope_head_dim"] = s.qk_nope;
    t["qk_rope_head_dim"] = s.qk_rope;
    t["v_head_dim"] = s.v_head;
    t["n_routed_experts"] = s.experts;
    t["num_experts_per_tok"] = experts_per_tok;
    t["n_shared_experts"] = s.shared_experts;
    c["vision_config"]["hidden_size"] = s.vision_hidden;
    c["vision_config"]["num_hidden_layers"] = s.vision_blocks;
    write_text((fs::path(out) / "config.json").string(), c.dump(2) + "\n");
    const std::string quant = (fs::path(config_dir) / "hf_quant_config.json").string();
    write_text((fs::path(out) / "hf_quant_config.json").string(),
               read_json_file(quant).dump(2) + "\n");
}

void write_generation_config(const std::string& out) {
    // [BOS], and <|im_end|>: the end of an assistant turn (the tokenizer's eos_token is [EOS]).
    const nlohmann::ordered_json g = {{"bos_token_id", 163584}, {"eos_token_id", 163586}};
    write_text((fs::path(out) / "generation_config.json").string(), g.dump(2) + "\n");
}

void write_chat_template(const std::string& template_path, const std::string& out) {
    write_text((fs::path(out) / "chat_template.jinja").string(), read_text_file(template_path));
}

void write_tokenizer(const std::string& base_ranks, const std::string& out) {
    std::ifstream in(base_ranks, std::ios::binary);
    if (!in)
        bad_input("{}: cannot read the base ranks (a tiktoken file; --base-ranks FILE)",
                  base_ranks);
    std::string text, line;
    int64_t expected = 0;
    while (expected < kKimiBaseTokens && std::getline(in, line)) {
        if (line.empty()) continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos)
            bad_input("{}: line {} is not '<base64> <rank>'", base_ranks, expected + 1);
        const std::string rank = line.substr(space + 1);
        if (rank != std::to_string(expected))
            bad_input("{}: rank {} where {} was expected (ranks must count up from 0)", base_ranks,
                      rank, expected);
        text += line;
        text += '\n';
        ++expected;
    }
    if (expected < kKimiBaseTokens)
        bad_input("{}: {} ranks, fewer than Kimi's {} base tokens", base_ranks, expected,
                  kKimiBaseTokens);
    write_text((fs::path(out) / "tiktoken.model").string(), text);

    nlohmann::ordered_json added = nlohmann::ordered_json::object();
    for (int64_t id = kKimiBaseTokens; id < kKimiBaseTokens + kKimiSpecialTokens; ++id) {
        const auto it = special_names().find(id);
        const std::string name =
            it != special_names().end() ? it->second : fmt::format("<|reserved_token_{}|>", id);
        added[std::to_string(id)] = {{"content", name},      {"lstrip", false},
                                     {"normalized", false},  {"rstrip", false},
                                     {"single_word", false}, {"special", true}};
    }
    // The fields of Kimi's tokenizer_config.json; its pat_str lives in tokenization_kimi.py (the
    // reader's default), so none is written here.
    nlohmann::ordered_json cfg = {
        {"added_tokens_decoder", added},
        {"additional_special_tokens",
         {"<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|start_header_id|>",
          "<|end_header_id|>", "[EOT]", "<|im_system|>", "<|im_middle|>"}},
        {"auto_map", {{"AutoTokenizer", {"tokenization_kimi.TikTokenTokenizer", nullptr}}}},
        {"bos_token", "[BOS]"},
        {"clean_up_tokenization_spaces", false},
        {"eos_token", "[EOS]"},
        {"extra_special_tokens", nlohmann::ordered_json::object()},
        {"model_max_length", 1e30},  // spelled as Python writes int(1e30) below
        {"pad_token", "[PAD]"},
        {"tokenizer_class", "TikTokenTokenizer"},
        {"unk_token", "[UNK]"},
    };
    std::string json = cfg.dump(2);
    const std::string as_double = "\"model_max_length\": 1e+30";
    if (const size_t at = json.find(as_double); at != std::string::npos)
        json.replace(at, as_double.size(), "\"model_max_length\": 1000000000000000019884624838656");
    write_text((fs::path(out) / "tokenizer_config.json").string(), json + "\n");
}

}  // namespace myriad::tools
