#include "grammar/grammar_cache.h"

namespace myriad::grammar {

namespace {
constexpr size_t kSharedEntries = 256;
constexpr size_t kSharedBytes = size_t{512} << 20;
}  // namespace

std::shared_ptr<const Grammar> GrammarCache::get(
    const std::string& key, const std::function<std::shared_ptr<const Grammar>()>& make) {
    {
        std::lock_guard lock(mutex_);
        if (auto it = index_.find(key); it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            ++hits_;
            return it->second->grammar;
        }
        ++misses_;
    }
    std::shared_ptr<const Grammar> g = make();
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->grammar;  // a race
    lru_.push_front({key, g});
    index_[key] = lru_.begin();
    evict_locked();
    return g;
}

// Drops the oldest entries past the count, then past the bytes (the newest always stays).
void GrammarCache::evict_locked() {
    while (lru_.size() > max_entries_ && lru_.size() > 1) {
        index_.erase(lru_.back().key);
        lru_.pop_back();
    }
    size_t bytes = 0;
    for (const Entry& e : lru_) bytes += e.key.size() + e.grammar->memory_bytes();
    while (bytes > max_bytes_ && lru_.size() > 1) {
        bytes -= lru_.back().key.size() + lru_.back().grammar->memory_bytes();
        index_.erase(lru_.back().key);
        lru_.pop_back();
    }
}

size_t GrammarCache::size() const {
    std::lock_guard lock(mutex_);
    return lru_.size();
}

uint64_t GrammarCache::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

uint64_t GrammarCache::misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
}

GrammarCache& GrammarCache::shared() {
    static GrammarCache cache(kSharedEntries, kSharedBytes);
    return cache;
}

}  // namespace myriad::grammar
