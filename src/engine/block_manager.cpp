#include "engine/block_manager.h"

#include <algorithm>

#include "util/error.h"

namespace myriad {

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
    MYRIAD_CHECK(num_blocks > 0 && block_size > 0, "block manager of {} blocks of {} tokens",
                 num_blocks, block_size);
    blocks_.resize(static_cast<size_t>(num_blocks));
    for (BlockId i = 0; i < num_blocks; ++i) {
        blocks_[i].free_pos = free_.insert(free_.end(), i);
        blocks_[i].in_free = true;
    }
}

uint64_t BlockManager::chain_hash(uint64_t prev, const TokenId* tokens, int64_t n) {
    // 64-bit mix (splitmix64 finaliser per token); contents are compared on a hit, so a collision
    // costs a cache miss, never a wrong block.
    uint64_t h = prev ^ 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; ++i) {
        h ^= static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) + 0x9e3779b97f4a7c15ull +
             (h << 6) + (h >> 2);
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebull;
        h ^= h >> 31;
    }
    return h;
}

void BlockManager::unhash(BlockId id) {
    Block& b = blocks_[id];
    if (!b.hashed) return;
    auto it = cached_.find(b.hash);
    if (it != cached_.end() && it->second == id) cached_.erase(it);
    b.hashed = false;
    b.tokens.clear();
}

BlockId BlockManager::pop_free() {
    BlockId id = free_.front();
    free_.pop_front();
    Block& b = blocks_[id];
    b.in_free = false;
    unhash(id);  // evicted: its prefix is no longer cached
    b.refs = 1;
    return id;
}

std::vector<BlockId> BlockManager::take_cached_prefix(const std::vector<TokenId>& tokens,
                                                      int64_t limit) {
    std::vector<BlockId> out;
    if (!prefix_caching_) return out;
    const int64_t n = static_cast<int64_t>(tokens.size());
    // Full blocks only, and at least one token left to compute (its logits are needed).
    const int64_t max_blocks = std::min((n - 1) / block_size_, limit / block_size_);
    uint64_t h = 0;
    for (int64_t i = 0; i < max_blocks; ++i) {
        const TokenId* t = tokens.data() + i * block_size_;
        h = chain_hash(h, t, block_size_);
        auto it = cached_.find(h);
        if (it == cached_.end()) break;
        Block& b = blocks_[it->second];
        if (!std::equal(b.tokens.begin(), b.tokens.end(), t, t + block_size_)) break;
        if (b.in_free) {
            free_.erase(b.free_pos);
            b.in_free = false;
        }
        ++b.refs;
        out.push_back(it->second);
    }
    hits_ += static_cast<int64_t>(out.size());
    return out;
}

bool BlockManager::grow(std::vector<BlockId>& table, int64_t tokens) {
    const int64_t need = blocks_for(tokens, block_size_) - static_cast<int64_t>(table.size());
    if (need <= 0) return true;
    if (need > num_free()) return false;
    for (int64_t i = 0; i < need; ++i) table.push_back(pop_free());
    return true;
}

void BlockManager::shrink(std::vector<BlockId>& table, int64_t tokens) {
    const size_t keep = static_cast<size_t>(blocks_for(tokens, block_size_));
    while (table.size() > keep) {
        Block& b = blocks_[table.back()];
        MYRIAD_CHECK(b.refs > 0, "block {} released with {} references", table.back(), b.refs);
        if (--b.refs == 0) {
            b.free_pos = free_.insert(b.hashed ? free_.end() : free_.begin(), table.back());
            b.in_free = true;
        }
        table.pop_back();
    }
}

void BlockManager::register_full_blocks(const std::vector<BlockId>& table,
                                        const std::vector<TokenId>& tokens, int64_t computed,
                                        std::vector<uint64_t>& hashes) {
    if (!prefix_caching_) return;
    const int64_t full = std::min<int64_t>(computed / block_size_, table.size());
    for (int64_t i = static_cast<int64_t>(hashes.size()); i < full; ++i) {
        const TokenId* t = tokens.data() + i * block_size_;
        const uint64_t h = chain_hash(hashes.empty() ? 0 : hashes.back(), t, block_size_);
        hashes.push_back(h);
        Block& b = blocks_[table[i]];
        if (b.hashed) continue;          // already registered (or taken from the cache)
        if (cached_.count(h)) continue;  // another block holds this prefix already
        b.hash = h;
        b.hashed = true;
        b.tokens.assign(t, t + block_size_);
        cached_[h] = table[i];
    }
}

void BlockManager::release(std::vector<BlockId>& table) {
    // Last blocks first, so a sequence's tail is evicted before its (more shareable) head.
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
        Block& b = blocks_[*it];
        MYRIAD_CHECK(b.refs > 0, "block {} released with {} references", *it, b.refs);
        if (--b.refs == 0) {
            b.free_pos = free_.insert(free_.end(), *it);
            b.in_free = true;
        }
    }
    table.clear();
}

void BlockManager::check_invariants() const {
    int64_t in_free = 0;
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const Block& b = blocks_[i];
        MYRIAD_CHECK(b.refs >= 0, "block {} has {} references", i, b.refs);
        MYRIAD_CHECK(!(b.in_free && b.refs > 0), "block {} is free and used ({} references)", i,
                     b.refs);
        MYRIAD_CHECK(b.in_free || b.refs > 0, "block {} is neither free nor used", i);
        in_free += b.in_free;
    }
    MYRIAD_CHECK(in_free == num_free(), "{} blocks marked free, free list holds {}", in_free,
                 num_free());
    for (const auto& [h, id] : cached_)
        MYRIAD_CHECK(blocks_[id].hashed && blocks_[id].hash == h,
                     "prefix cache entry points at block {} which does not hold it", id);
}

}  // namespace myriad
