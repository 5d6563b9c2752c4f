// Byte strings -> token id, as an open-addressing hash table over one arena: the lookup on the
// hot path of BPE (tiktoken's rank of a byte string, a piece already in the vocabulary).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace myriad {

// A fast hash of short byte strings (not for untrusted adversarial keys at scale: the table
// grows, it does not chain, so a collision flood costs time, never correctness).
inline uint64_t hash_bytes(const char* p, size_t n) {
    constexpr uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
    uint64_t h = k1 ^ (n * k2);
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * k2;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w ^ (uint64_t{n} << 59)) * k1;
    }
    h ^= h >> 29;
    h *= k2;
    h ^= h >> 32;
    return h;
}

class TokenTable {
  public:
    static constexpr int32_t kMissing = -1;

    // Adds `key` -> id; a key added twice keeps the later id.
    void insert(std::string_view key, int32_t id);
    int32_t find(std::string_view key) const {
        if (slots_.empty()) return kMissing;
        uint64_t h = hash_bytes(key.data(), key.size());
        uint32_t tag = static_cast<uint32_t>(h >> 32) | 1u;
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.tag == 0) return kMissing;
            if (s.tag == tag && s.length == key.size() &&
                std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
                return s.id;
        }
    }
    size_t size() const { return count_; }

  private:
    struct Slot {
        uint32_t tag = 0;  // 0: empty
        uint32_t length = 0;
        uint64_t offset = 0;
        int32_t id = 0;
    };
    void grow();

    std::vector<Slot> slots_;
    std::string arena_;
    size_t mask_ = 0;
    size_t count_ = 0;
};

// (left id, right id) -> (merge rank, merged id): HF BPE's merges.
class PairTable {
  public:
    struct Merge {
        int32_t rank;
        int32_t id;
    };
    void insert(int32_t left, int32_t right, Merge m);
    const Merge* find(int32_t left, int32_t right) const {
        if (slots_.empty()) return nullptr;
        uint64_t key = pack(left, right);
        for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == kEmpty) return nullptr;
            if (s.key == key) return &s.merge;
        }
    }
    size_t size() const { return count_; }

  private:
    static constexpr uint64_t kEmpty = ~0ull;
    static uint64_t pack(int32_t a, int32_t b) {
        return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
    }
    static uint64_t mix(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        return k;
    }
    struct Slot {
        uint64_t key = kEmpty;
        Merge merge{};
    };
    void grow();

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t count_ = 0;
};

}  // namespace myriad
