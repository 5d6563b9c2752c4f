// Byte-pair encoding of one pre-tokenized piece: start from single symbols (bytes, or UTF-8
// characters for character-level vocabularies) and repeatedly merge the adjacent pair of lowest
// rank, the leftmost on ties, until no pair has a rank. HF's BPE ranks a pair by its position in
// `merges`; tiktoken ranks it by the rank (= id) of the concatenated bytes. Same algorithm.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_table.h"
#include "tokenizer/tokenizer.h"

namespace myriad {

struct BpeOptions {
    bool byte_level = true;          // initial symbols are bytes; otherwise characters
    bool ranks_from_vocab = false;   // tiktoken: a pair's rank is the id of its bytes
    bool whole_piece_first = false;  // a piece that is a token is that token (tiktoken,
                                     // HF ignore_merges)
    std::optional<TokenId> unk;      // HF: characters outside the vocabulary
    bool fuse_unk = false;
    bool byte_fallback = false;  // HF: unknown characters as <0xNN> tokens
};

class Bpe {
  public:
    explicit Bpe(BpeOptions options);

    // The vocabulary, as the model's symbols spell it (raw bytes when byte_level).
    void add_token(std::string_view bytes, TokenId id);
    // HF merges: `left`+`right` becomes `merged` at `rank` (lower merges first).
    void add_merge(TokenId left, TokenId right, int32_t rank, TokenId merged);

    TokenId find(std::string_view bytes) const { return tokens_.find(bytes); }
    const BpeOptions& options() const { return options_; }

    // Appends the ids of `piece` to `out`. Thread-safe; repeated pieces come from a per-thread
    // cache.
    void encode(std::string_view piece, std::vector<TokenId>& out) const;

  private:
    void merge(std::string_view piece, std::vector<TokenId>& out) const;
    void initial_symbols(std::string_view piece, std::vector<uint32_t>& starts,
                         std::vector<TokenId>& ids) const;

    BpeOptions options_;
    TokenTable tokens_;
    PairTable merges_;
    TokenId byte_fallback_ids_[256];
    uint64_t serial_;  // identifies this model's entries in the per-thread caches
};

}  // namespace myriad
