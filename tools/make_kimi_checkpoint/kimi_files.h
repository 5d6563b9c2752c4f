// The small files of a Kimi-K2.5-NVFP4 checkpoint folder: config.json and hf_quant_config.json
// (the repository's copies in tests/data/configs/kimi-k2.5-nvfp4 with the text model's widths and
// layer count set), generation_config.json, chat_template.jinja (tests/data/chat_templates/
// kimi-k2.5.jinja), and a tokenizer in Kimi's layout: tiktoken.model with 163,584 base tokens
// and tokenizer_config.json naming the special tokens at Kimi's ids (reference.md §4.1).
#pragma once

#include <cstdint>
#include <string>

#include "kimi_tensors.h"

namespace myriad::tools {

// Kimi's first special id and the number of base tokens below it.
inline constexpr int64_t kKimiBaseTokens = 163584;
inline constexpr int64_t kKimiSpecialTokens = 256;

// The text and vision widths of the repository's config.json (the real model's).
KimiShape shape_of_config(const std::string& config_path);

// Writes config.json (from `config_path`, its text_config and vision_config set from `shape`, and
// num_experts_per_tok from `experts_per_tok`) and hf_quant_config.json (copied) into `out`.
void write_configs(const std::string& config_dir, const KimiShape& shape, int64_t experts_per_tok,
                   const std::string& out);

void write_generation_config(const std::string& out);

// chat_template.jinja: the file at `template_path`, copied.
void write_chat_template(const std::string& template_path, const std::string& out);

// tiktoken.model: the first kKimiBaseTokens ranks of the tiktoken file at `base_ranks` (a larger
// vocabulary in the same format, e.g. o200k_base: its ranks are merge order, so any prefix is a
// complete BPE vocabulary); tokenizer_config.json with Kimi's special tokens.
void write_tokenizer(const std::string& base_ranks, const std::string& out);

}  // namespace myriad::tools
