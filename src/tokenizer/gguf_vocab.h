// A GGUF file's tokenizer (tokenizer.ggml.*, reference.md §3.2) and chat template
// (tokenizer.chat_template), read into the same structures as a tokenizer.json: model "gpt2" is
// byte-level BPE with `tokens` (NORMAL spellings in GPT-2's byte alphabet), `merges` ("a b"),
// `token_type` (CONTROL tokens become special added tokens, USER_DEFINED non-special ones,
// UNUSED [PADn] fillers stay plain vocabulary) and `pre` naming the pre-tokenizer's split
// regexes as llama.cpp applies them.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace myriad {

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufModel& model);

// The tokenizer.json pre_tokenizer object for a tokenizer.ggml.pre name ("deepseek-v3",
// "deepseek-llm", "kimi-k2", ...); nullopt for names myriad does not know.
std::optional<nlohmann::ordered_json> gguf_pre_tokenizer(std::string_view pre);

// The chat templates: ("default", tokenizer.chat_template) and (NAME,
// tokenizer.chat_template.NAME).
std::vector<std::pair<std::string, std::string>> gguf_chat_templates(const GgufModel& model);

// bos_token / eos_token / pad_token / unk_token as strings, for chat templates.
nlohmann::ordered_json gguf_special_tokens(const GgufModel& model);

}  // namespace myriad
