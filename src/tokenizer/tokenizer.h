// Tokenizer: text <-> token ids for the two kinds checkpoints ship — Hugging Face tokenizer.json
// (byte-level BPE) and tiktoken.model files (the Kimi-K2 family) — with their special tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myriad {

using TokenId = int32_t;

class Tokenizer {
  public:
    virtual ~Tokenizer() = default;

    // Loads from a folder holding tokenizer.json, or tiktoken.model (+ tokenizer_config.json),
    // or from a .gguf file's tokenizer.ggml.* metadata.
    // Bad input names the file and what is wrong.
    static std::unique_ptr<Tokenizer> load(const std::string& dir);

    // Special-token text inside `text` becomes the special token. With add_special_tokens the
    // tokenizer's BOS (or post-processor template) is added.
    virtual std::vector<TokenId> encode(std::string_view text,
                                        bool add_special_tokens = false) const = 0;
    // Bytes of the ids joined (invalid UTF-8 replaced by U+FFFD), specials dropped if asked.
    virtual std::string decode(const std::vector<TokenId>& ids,
                               bool skip_special_tokens = false) const = 0;

    // Total ids (base vocabulary + added/special tokens); ids are 0..vocab_size()-1 but may
    // have holes.
    virtual int64_t vocab_size() const = 0;
    virtual std::optional<TokenId> token_to_id(std::string_view token) const = 0;
    // A token's text as the vocabulary spells it (specials by name), nullopt for holes.
    virtual std::optional<std::string> id_to_token(TokenId id) const = 0;
    virtual bool is_special(TokenId id) const = 0;
    // The raw bytes a token stands for (for the incremental detokenizer); empty for holes.
    virtual std::string token_bytes(TokenId id) const = 0;
    virtual std::optional<TokenId> bos_id() const = 0;
    virtual std::optional<TokenId> eos_id() const = 0;
};

}  // namespace myriad
