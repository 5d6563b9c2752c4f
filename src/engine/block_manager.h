// BlockManager: the blocks of the paged latent KV cache. Allocation, freeing, reference counts,
// and prefix caching: a full block is known by a hash of its tokens and of every token before it,
// so a request that repeats a prefix (agents resend long histories) reuses those blocks and skips
// their prefill. Free blocks that still hold a cached prefix are evicted least recently used.
#pragma once

#include <climits>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "ops/step_input.h"

namespace myriad {

class BlockManager {
  public:
    BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching = true);

    int64_t block_size() const { return block_size_; }
    int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
    // Blocks that can be handed out now: never used, or free but holding a cached prefix.
    int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
    int64_t num_used() const { return num_blocks() - num_free(); }
    static int64_t blocks_for(int64_t tokens, int64_t block_size) {
        return (tokens + block_size - 1) / block_size;
    }

    // Takes the cached blocks holding the longest prefix of `tokens` made of full blocks, leaving
    // at least one token to compute and covering at most `limit` tokens. Returns their ids (each
    // now referenced once more).
    std::vector<BlockId> take_cached_prefix(const std::vector<TokenId>& tokens,
                                            int64_t limit = INT64_MAX);
    // Extends `table` with fresh blocks until it covers `tokens` tokens; false (and nothing
    // changed) when too few blocks are free.
    bool grow(std::vector<BlockId>& table, int64_t tokens);
    // Gives back the blocks of `table` past those covering `tokens` tokens (a rejected draft's:
    // never registered, so nothing cached is lost; handed out again before any cached block).
    void shrink(std::vector<BlockId>& table, int64_t tokens);
    // Registers every block of `table` that is full within tokens[0, computed) in the prefix
    // cache (once computed, its contents are final). `hashes` holds the sequence's chain hashes
    // computed so far and is extended, so each block is hashed once.
    void register_full_blocks(const std::vector<BlockId>& table, const std::vector<TokenId>& tokens,
                              int64_t computed, std::vector<uint64_t>& hashes);
    // Drops one reference from each block; blocks at zero become free (cached ones stay findable
    // until evicted).
    void release(std::vector<BlockId>& table);

    // Aborts with a message if a block is both free and used, a count is negative, or the hash
    // map points at a block that does not hold that hash.
    void check_invariants() const;
    int64_t cache_hits() const { return hits_; }

  private:
    struct Block {
        int32_t refs = 0;
        uint64_t hash = 0;
        bool hashed = false;
        std::vector<TokenId> tokens;  // the block's tokens, to confirm hash matches
        std::list<BlockId>::iterator free_pos;
        bool in_free = false;
    };
    static uint64_t chain_hash(uint64_t prev, const TokenId* tokens, int64_t n);
    BlockId pop_free();
    void unhash(BlockId id);

    int64_t block_size_;
    bool prefix_caching_;
    std::vector<Block> blocks_;
    std::list<BlockId> free_;  // front: evicted first (least recently freed)
    std::unordered_map<uint64_t, BlockId> cached_;
    int64_t hits_ = 0;
};

}  // namespace myriad
