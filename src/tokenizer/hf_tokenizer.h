// A Hugging Face tokenizer.json tokenizer: added tokens, normalizer, pre-tokenizer, BPE model,
// post-processor (for add_special_tokens) and decoder, run as HF tokenizers runs them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_json.h"

namespace myriad {

class HfTokenizer : public Tokenizer {
  public:
    // `json` is the text of tokenizer.json; `source` names it in messages.
    HfTokenizer(std::string_view json, const TokenizerConfig& config, const std::string& source);
    // The same from an already-parsed (or built: GGUF vocabularies) tokenizer.json; the
    // vocabulary covers at least `min_size` ids.
    HfTokenizer(TokenizerJson tj, const TokenizerConfig& config, const std::string& source,
                int64_t min_size = 0);

    std::vector<TokenId> encode(std::string_view text,
                                bool add_special_tokens = false) const override;
    std::string decode(const std::vector<TokenId>& ids,
                       bool skip_special_tokens = false) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
    std::optional<TokenId> token_to_id(std::string_view token) const override;
    std::optional<std::string> id_to_token(TokenId id) const override;
    bool is_special(TokenId id) const override;
    std::string token_bytes(TokenId id) const override;
    std::optional<TokenId> bos_id() const override { return bos_; }
    std::optional<TokenId> eos_id() const override { return eos_; }

  private:
    // Encodes normalized text without added tokens in it.
    void encode_text(std::string_view text, bool at_origin, std::vector<TokenId>& out) const;

    struct Entry {
        std::string text;  // the vocabulary's spelling (or the added token's content)
        int8_t added = 0;  // 1: an added token, 2: a special added token
        bool present = false;
    };
    std::vector<Entry> tokens_;                         // by id
    TokenTable vocab_;                                  // the model's spellings
    std::unordered_map<std::string, TokenId> by_text_;  // added tokens' contents
    std::unique_ptr<Bpe> bpe_;
    std::unique_ptr<Normalizer> normalizer_;
    std::unique_ptr<PreTokenizer> pre_tokenizer_;
    std::unique_ptr<Decoder> decoder_;
    AddedTokenMatcher raw_added_, normalized_added_;
    bool byte_level_ = false;
    // add_special_tokens: the ids around the text (TemplateProcessing, or BOS/EOS from
    // tokenizer_config's add_bos_token / add_eos_token).
    std::vector<TokenId> prefix_, suffix_;
    std::optional<TokenId> bos_, eos_;
    std::string source_;
};

}  // namespace myriad
