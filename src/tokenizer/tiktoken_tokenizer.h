// A tiktoken tokenizer (the Kimi-K2 family): tiktoken.model holds `<base64 of bytes> <rank>` per
// line (rank = id); special tokens come from tokenizer_config.json's added_tokens_decoder, and
// ids [n_base, n_base + 256) without a name are `<|reserved_token_{id}|>` (tokenization_kimi.py).
// Text between special tokens is cut by the pattern (tokenizer_config's pat_str, else Kimi's) and
// each piece is BPE-encoded by rank; a piece that is itself a token is that token (as tiktoken).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace myriad {

// Kimi-K2's pat_str (reference.md §4.1), in its original Rust syntax with class intersection.
extern const std::string_view kKimiPattern;

class TiktokenTokenizer : public Tokenizer {
  public:
    // `model` is the text of tiktoken.model, `source` its name in messages.
    TiktokenTokenizer(std::string_view model, const TokenizerConfig& config,
                      const std::string& source, const std::string& config_source);

    std::vector<TokenId> encode(std::string_view text,
                                bool add_special_tokens = false) const override;
    std::string decode(const std::vector<TokenId>& ids,
                       bool skip_special_tokens = false) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
    std::optional<TokenId> token_to_id(std::string_view token) const override;
    // Base tokens are spelled in GPT-2's byte-level alphabet (as HF spells converted tiktoken
    // vocabularies), specials by name.
    std::optional<std::string> id_to_token(TokenId id) const override;
    bool is_special(TokenId id) const override;
    std::string token_bytes(TokenId id) const override;
    std::optional<TokenId> bos_id() const override { return bos_; }
    std::optional<TokenId> eos_id() const override { return eos_; }

    const std::string& pattern() const { return regex_->pattern(); }

  private:
    struct Entry {
        std::string bytes;  // raw bytes, or a special token's name
        int8_t kind = 0;    // 0: hole, 1: base token, 2: special
    };
    std::vector<Entry> tokens_;
    Bpe bpe_;
    std::unique_ptr<Regex> regex_;
    AddedTokenMatcher specials_;
    std::unordered_map<std::string, TokenId> special_ids_;
    std::optional<TokenId> bos_, eos_;
    std::vector<TokenId> prefix_, suffix_;
};

}  // namespace myriad
