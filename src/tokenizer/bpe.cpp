#include "tokenizer/bpe.h"

#include <algorithm>
#include <climits>
#include <queue>

#include "tokenizer/utf8.h"

namespace myriad {

namespace {

constexpr int32_t kNoRank = INT32_MAX;
// Pieces this long or longer merge with a heap (n log n); shorter ones by scanning.
constexpr size_t kHeapFrom = 48;
// Pieces shorter than this skip the cache: merging them costs about as much as a lookup.
constexpr size_t kCacheFrom = 3;

std::atomic<uint64_t> next_serial{1};

// Recently encoded pieces -> ids, for one thread and one Bpe. Cleared when full.
class PieceCache {
  public:
    static constexpr size_t kMaxEntries = 1 << 16;

    void reset(uint64_t owner) {
        owner_ = owner;
        slots_.assign(kMaxEntries * 2, Slot{});
        keys_.clear();
        ids_.clear();
        count_ = 0;
    }
    uint64_t owner() const { return owner_; }

    // Appends the cached ids of `piece` to `out`; false when absent.
    bool get(std::string_view piece, uint64_t h, std::vector<TokenId>& out) const {
        uint32_t tag = static_cast<uint32_t>(h >> 32) | 1u;
        size_t mask = slots_.size() - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            const Slot& s = slots_[i];
            if (s.tag == 0) return false;
            if (s.tag == tag && s.key_len == piece.size() &&
                std::memcmp(keys_.data() + s.key_off, piece.data(), piece.size()) == 0) {
                out.insert(out.end(), ids_.begin() + s.ids_off,
                           ids_.begin() + s.ids_off + s.ids_len);
                return true;
            }
        }
    }
    void put(std::string_view piece, uint64_t h, const TokenId* ids, size_t n) {
        if (count_ + 1 > kMaxEntries || keys_.size() > (64u << 20)) reset(owner_);
        uint32_t tag = static_cast<uint32_t>(h >> 32) | 1u;
        size_t mask = slots_.size() - 1;
        size_t i = h & mask;
        while (slots_[i].tag != 0) i = (i + 1) & mask;
        slots_[i] = Slot{tag, static_cast<uint32_t>(piece.size()), keys_.size(),
                         static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(n)};
        keys_.append(piece);
        ids_.insert(ids_.end(), ids, ids + n);
        ++count_;
    }

  private:
    struct Slot {
        uint32_t tag = 0;
        uint32_t key_len = 0;
        size_t key_off = 0;
        uint32_t ids_off = 0;
        uint32_t ids_len = 0;
    };
    uint64_t owner_ = 0;
    std::vector<Slot> slots_;
    std::string keys_;
    std::vector<TokenId> ids_;
    size_t count_ = 0;
};

// Work arrays reused by every merge on this thread.
struct Scratch {
    std::vector<uint32_t> starts, ends;
    std::vector<TokenId> ids, merged;
    std::vector<int32_t> ranks, prev, next;
    struct Entry {
        int32_t rank;
        int32_t left;
        uint32_t left_end, right_end;
        TokenId merged;
        bool operator>(const Entry& o) const {
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    std::vector<Entry> heap;
};

thread_local Scratch scratch;
thread_local PieceCache cache;

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

Bpe::Bpe(BpeOptions options) : options_(options), serial_(next_serial++) {
    std::fill(std::begin(byte_fallback_ids_), std::end(byte_fallback_ids_), TokenTable::kMissing);
}

void Bpe::add_token(std::string_view bytes, TokenId id) {
    tokens_.insert(bytes, id);
    // "<0xNN>" tokens stand for bytes of unknown characters (byte_fallback).
    if (bytes.size() == 6 && bytes.starts_with("<0x") && bytes[5] == '>') {
        int hi = hex_digit(bytes[3]), lo = hex_digit(bytes[4]);
        if (hi >= 0 && lo >= 0) byte_fallback_ids_[hi * 16 + lo] = id;
    }
}

void Bpe::add_merge(TokenId left, TokenId right, int32_t rank, TokenId merged) {
    merges_.insert(left, right, PairTable::Merge{rank, merged});
}

void Bpe::initial_symbols(std::string_view piece, std::vector<uint32_t>& starts,
                          std::vector<TokenId>& ids) const {
    starts.clear();
    ids.clear();
    if (options_.byte_level) {
        for (size_t i = 0; i < piece.size(); ++i) {
            TokenId id = tokens_.find(piece.substr(i, 1));
            // tiktoken ranks by bytes, so an unknown byte may still merge into a known token.
            if (id == TokenTable::kMissing && !options_.ranks_from_vocab) continue;
            starts.push_back(static_cast<uint32_t>(i));
            ids.push_back(id);
        }
        return;
    }
    bool last_unk = false;
    for (size_t i = 0; i < piece.size();) {
        size_t n = utf8::char_length(piece, i);
        if (n == 0) n = 1;  // not reached: text is valid UTF-8 by now
        TokenId id = tokens_.find(piece.substr(i, n));
        if (id != TokenTable::kMissing) {
            starts.push_back(static_cast<uint32_t>(i));
            ids.push_back(id);
            last_unk = false;
        } else if (options_.byte_fallback &&
                   std::all_of(piece.begin() + i, piece.begin() + i + n, [&](char b) {
                       return byte_fallback_ids_[static_cast<unsigned char>(b)] >= 0;
                   })) {
            for (size_t k = 0; k < n; ++k) {
                starts.push_back(static_cast<uint32_t>(i + k));
                ids.push_back(byte_fallback_ids_[static_cast<unsigned char>(piece[i + k])]);
            }
            last_unk = false;
        } else if (options_.unk) {
            if (!(options_.fuse_unk && last_unk)) {
                starts.push_back(static_cast<uint32_t>(i));
                ids.push_back(*options_.unk);
            }
            last_unk = true;
        }
        i += n;
    }
}

void Bpe::merge(std::string_view piece, std::vector<TokenId>& out) const {
    Scratch& s = scratch;
    initial_symbols(piece, s.starts, s.ids);
    const size_t n0 = s.ids.size();
    if (n0 == 0) return;
    // Symbol k spans [starts[k], starts[k + 1]) in tiktoken mode (symbols are contiguous).
    auto pair = [&](size_t left_start, size_t right_end, TokenId a, TokenId b) -> PairTable::Merge {
        if (options_.ranks_from_vocab) {
            TokenId t = tokens_.find(piece.substr(left_start, right_end - left_start));
            return t == TokenTable::kMissing ? PairTable::Merge{kNoRank, -1}
                                             : PairTable::Merge{t, t};
        }
        if (a < 0 || b < 0) return {kNoRank, -1};
        const PairTable::Merge* m = merges_.find(a, b);
        return m ? *m : PairTable::Merge{kNoRank, -1};
    };

    if (n0 < kHeapFrom) {
        auto& starts = s.starts;
        auto& ids = s.ids;
        starts.push_back(static_cast<uint32_t>(piece.size()));
        size_t n = n0;
        s.ranks.resize(n);
        s.merged.resize(n);
        auto update = [&](size_t i) {
            PairTable::Merge m = pair(starts[i], starts[i + 2], ids[i], ids[i + 1]);
            s.ranks[i] = m.rank;
            s.merged[i] = m.id;
        };
        for (size_t i = 0; i + 1 < n; ++i) update(i);
        while (n > 1) {
            size_t best = 0;
            int32_t best_rank = kNoRank;
            for (size_t i = 0; i + 1 < n; ++i)
                if (s.ranks[i] < best_rank) best_rank = s.ranks[i], best = i;
            if (best_rank == kNoRank) break;
            ids[best] = s.merged[best];
            starts.erase(starts.begin() + best + 1);
            ids.erase(ids.begin() + best + 1);
            s.ranks.erase(s.ranks.begin() + best + 1);
            s.merged.erase(s.merged.begin() + best + 1);
            --n;
            if (best + 1 < n) update(best);
            if (best > 0) update(best - 1);
        }
        for (size_t i = 0; i < n; ++i)
            if (ids[i] >= 0) out.push_back(ids[i]);
        return;
    }

    // Long pieces: a linked list of symbols and a heap of candidate merges. An entry is stale
    // when either symbol has changed since (its end moved) or the left one is gone.
    const size_t n = n0;
    s.ends.resize(n);
    s.prev.resize(n);
    s.next.resize(n);
    for (size_t k = 0; k < n; ++k) {
        s.ends[k] = k + 1 < n ? s.starts[k + 1] : static_cast<uint32_t>(piece.size());
        s.prev[k] = static_cast<int32_t>(k) - 1;
        s.next[k] = k + 1 < n ? static_cast<int32_t>(k + 1) : -1;
    }
    // In HF mode symbols may skip dropped characters; a symbol still ends where it ends.
    std::vector<uint8_t> alive(n, 1);
    auto& heap = s.heap;
    heap.clear();
    auto cmp = [](const Scratch::Entry& a, const Scratch::Entry& b) { return a > b; };
    auto push = [&](int32_t l) {
        int32_t r = s.next[l];
        if (r < 0) return;
        PairTable::Merge m = pair(s.starts[l], s.ends[r], s.ids[l], s.ids[r]);
        if (m.rank == kNoRank) return;
        heap.push_back({m.rank, l, s.ends[l], s.ends[r], m.id});
        std::push_heap(heap.begin(), heap.end(), cmp);
    };
    for (size_t k = 0; k + 1 < n; ++k) push(static_cast<int32_t>(k));
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), cmp);
        Scratch::Entry e = heap.back();
        heap.pop_back();
        int32_t l = e.left;
        if (!alive[l] || s.ends[l] != e.left_end) continue;
        int32_t r = s.next[l];
        if (r < 0 || s.ends[r] != e.right_end) continue;
        s.ids[l] = e.merged;
        s.ends[l] = s.ends[r];
        alive[r] = 0;
        s.next[l] = s.next[r];
        if (s.next[r] >= 0) s.prev[s.next[r]] = l;
        if (s.prev[l] >= 0) push(s.prev[l]);
        push(l);
    }
    for (int32_t k = 0; k >= 0; k = s.next[k])
        if (s.ids[k] >= 0) out.push_back(s.ids[k]);
}

void Bpe::encode(std::string_view piece, std::vector<TokenId>& out) const {
    if (piece.empty()) return;
    if (options_.whole_piece_first) {
        TokenId id = tokens_.find(piece);
        if (id != TokenTable::kMissing) {
            out.push_back(id);
            return;
        }
    }
    if (piece.size() < kCacheFrom) {
        merge(piece, out);
        return;
    }
    PieceCache& c = cache;
    if (c.owner() != serial_) c.reset(serial_);
    uint64_t h = hash_bytes(piece.data(), piece.size());
    if (c.get(piece, h, out)) return;
    size_t before = out.size();
    merge(piece, out);
    c.put(piece, h, out.data() + before, out.size() - before);
}

}  // namespace myriad
