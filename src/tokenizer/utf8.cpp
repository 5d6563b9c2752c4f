#include "tokenizer/utf8.h"

namespace myriad::utf8 {

namespace {

inline unsigned char at(std::string_view s, size_t i) {
    return static_cast<unsigned char>(s[i]);
}

// Valid range of the second byte after lead byte c (Unicode table 3-7); {0, 0} for no lead.
struct Range {
    unsigned char lo, hi;
    size_t n;
};

inline Range lead_range(unsigned char c) {
    if (c >= 0xc2 && c <= 0xdf) return {0x80, 0xbf, 2};
    if (c == 0xe0) return {0xa0, 0xbf, 3};
    if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return {0x80, 0xbf, 3};
    if (c == 0xed) return {0x80, 0x9f, 3};
    if (c == 0xf0) return {0x90, 0xbf, 4};
    if (c >= 0xf1 && c <= 0xf3) return {0x80, 0xbf, 4};
    if (c == 0xf4) return {0x80, 0x8f, 4};
    return {0, 0, 0};
}

// How many bytes at s[i] form a valid prefix of a character (stops at the end of s), and the
// character's full length (0 when s[i] is no lead byte).
inline size_t valid_prefix(std::string_view s, size_t i, size_t* full) {
    Range r = lead_range(at(s, i));
    *full = r.n;
    if (r.n == 0) return 0;
    size_t k = 1;
    if (i + k < s.size() && at(s, i + k) >= r.lo && at(s, i + k) <= r.hi) {
        ++k;
        while (k < r.n && i + k < s.size() && (at(s, i + k) & 0xc0) == 0x80) ++k;
    }
    return k;
}

}  // namespace

size_t char_length(std::string_view s, size_t i) {
    if (at(s, i) < 0x80) return 1;
    size_t full;
    size_t k = valid_prefix(s, i, &full);
    return full != 0 && k == full ? full : 0;
}

size_t invalid_length(std::string_view s, size_t i) {
    size_t full;
    size_t k = valid_prefix(s, i, &full);
    return k == 0 ? 1 : k;
}

bool is_valid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        // Eight ASCII bytes at a time.
        while (i + 8 <= s.size()) {
            uint64_t w;
            __builtin_memcpy(&w, s.data() + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= s.size()) break;
        size_t n = char_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string replace_invalid(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    size_t i = 0;
    while (i < s.size()) {
        size_t n = char_length(s, i);
        if (n > 0) {
            out.append(s.data() + i, n);
            i += n;
        } else {
            out += kReplacement;
            i += invalid_length(s, i);
        }
    }
    return out;
}

size_t complete_prefix(std::string_view s) {
    // Only the last three bytes can hold an unfinished character; find where one would start.
    size_t start = s.size() >= 3 ? s.size() - 3 : 0;
    for (size_t i = s.size(); i > start;) {
        --i;
        unsigned char c = at(s, i);
        if ((c & 0xc0) == 0x80) continue;  // continuation byte: keep looking for its lead
        size_t full;
        size_t k = valid_prefix(s, i, &full);
        // Unfinished only if every byte from i to the end is a valid prefix and it is short.
        if (full != 0 && i + k == s.size() && k < full) return i;
        return s.size();
    }
    return s.size();
}

uint32_t decode(std::string_view s, size_t i, size_t* length) {
    unsigned char c = at(s, i);
    if (c < 0x80) {
        *length = 1;
        return c;
    }
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    uint32_t cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (at(s, i + k) & 0x3f);
    *length = n;
    return cp;
}

void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

}  // namespace myriad::utf8
