// GrammarCache: compiled grammars shared across requests, keyed by the canonical text of what
// they were compiled from (a schema, a tool list), least recently used first out, bounded in
// count and in bytes (a grammar's automaton and masks grow as it is used, so the bytes are
// counted again at each insertion).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/grammar.h"

namespace myriad::grammar {

class GrammarCache {
  public:
    GrammarCache(size_t max_entries, size_t max_bytes)
        : max_entries_(max_entries), max_bytes_(max_bytes) {}

    // The grammar cached under `key`, else make() (outside the lock: compiling may take long,
    // and a failure, a BadInput error, caches nothing).
    std::shared_ptr<const Grammar> get(const std::string& key,
                                       const std::function<std::shared_ptr<const Grammar>()>& make);
    size_t size() const;
    uint64_t hits() const;
    uint64_t misses() const;

    // The process's cache, used by compile_json_schema and the tool-call grammars.
    static GrammarCache& shared();

  private:
    struct Entry {
        std::string key;
        std::shared_ptr<const Grammar> grammar;
    };
    void evict_locked();

    size_t max_entries_, max_bytes_;
    mutable std::mutex mutex_;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace myriad::grammar
