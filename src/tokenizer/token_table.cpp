#include "tokenizer/token_table.h"

namespace myriad {

void TokenTable::grow() {
    size_t n = slots_.empty() ? 1024 : slots_.size() * 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
        if (s.tag == 0) continue;
        uint64_t h = hash_bytes(arena_.data() + s.offset, s.length);
        size_t i = h & mask_;
        while (slots_[i].tag != 0) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

void TokenTable::insert(std::string_view key, int32_t id) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    uint64_t h = hash_bytes(key.data(), key.size());
    uint32_t tag = static_cast<uint32_t>(h >> 32) | 1u;
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.tag == 0) break;
        if (s.tag == tag && s.length == key.size() &&
            std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
            s.id = id;
            return;
        }
    }
    Slot& s = slots_[i];
    s.tag = tag;
    s.length = static_cast<uint32_t>(key.size());
    s.offset = arena_.size();
    s.id = id;
    arena_.append(key);
    ++count_;
}

void PairTable::grow() {
    size_t n = slots_.empty() ? 1024 : slots_.size() * 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
        if (s.key == kEmpty) continue;
        size_t i = mix(s.key) & mask_;
        while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

void PairTable::insert(int32_t left, int32_t right, Merge m) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    uint64_t key = pack(left, right);
    size_t i = mix(key) & mask_;
    for (;; i = (i + 1) & mask_) {
        if (slots_[i].key == key) {
            slots_[i].merge = m;
            return;
        }
        if (slots_[i].key == kEmpty) break;
    }
    slots_[i].key = key;
    slots_[i].merge = m;
    ++count_;
}

}  // namespace myriad
