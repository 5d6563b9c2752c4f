// A model's vocabulary as the matcher needs it: every token's bytes, the end-of-sequence ids
// (allowed only where the grammar accepts), and a byte trie over the tokens in preorder, so a
// token mask is one walk that skips every subtree the grammar rejects at its first byte.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace myriad {
class Tokenizer;
}

namespace myriad::grammar {

using TokenId = int32_t;

class Vocabulary {
  public:
    // token_bytes[id]: the bytes token `id` stands for; empty: never allowed (special tokens,
    // holes). eos_ids: allowed exactly where the document is complete.
    Vocabulary(std::vector<std::string> token_bytes, std::vector<TokenId> eos_ids);

    // From one of our tokenizers: the tokenizer's EOS (and any extra stop ids) end a document.
    // Special tokens, and the `markers` (added tokens a model writes as syntax, such as
    // DeepSeek's tool-call markers, which the tokenizer does not call special), are spelled
    // special_token_bytes(id), bytes that no text holds (0xFF never occurs in UTF-8; tokens
    // holding it are left out), so only a grammar that spells one that way (a tool-call
    // marker) admits it, and never as part of text.
    static std::shared_ptr<const Vocabulary> from_tokenizer(
        const Tokenizer& tokenizer, std::vector<TokenId> extra_eos = {},
        const std::vector<TokenId>& markers = {});
    // 0xFF, then the id in three bytes (big-endian).
    static std::string special_token_bytes(TokenId id);

    size_t size() const { return tokens_.size(); }
    size_t mask_words() const { return (tokens_.size() + 31) / 32; }
    const std::string& bytes(TokenId id) const { return tokens_[id]; }
    bool is_eos(TokenId id) const;
    const std::vector<TokenId>& eos_ids() const { return eos_; }
    uint64_t uid() const { return uid_; }

    struct TrieNode {
        uint8_t byte;
        uint16_t depth;                    // 1 for a token's first byte
        uint32_t skip;                     // index after this node's subtree
        uint32_t first_token, last_token;  // tokens_by_node_[first, last): tokens ending here
    };
    const std::vector<TrieNode>& trie() const { return trie_; }
    const std::vector<TokenId>& tokens_by_node() const { return by_node_; }
    size_t max_depth() const { return max_depth_; }

  private:
    std::vector<std::string> tokens_;
    std::vector<TokenId> eos_;
    std::vector<TrieNode> trie_;  // preorder; index 0 is the root
    std::vector<TokenId> by_node_;
    size_t max_depth_ = 0;
    uint64_t uid_;
};

}  // namespace myriad::grammar
