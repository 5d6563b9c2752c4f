// UTF-8 encoding of code point ranges (split until every piece is a fixed prefix followed by
// full continuation ranges), and the JSON escapes.
#include "grammar/json_text.h"

#include <algorithm>

namespace myriad::grammar {
namespace {

constexpr uint32_t kMaxCode = 0x10ffff;

int utf8_len(uint32_t c) {
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

void encode(uint32_t c, uint8_t* out) {
    int n = utf8_len(c);
    if (n == 1) {
        out[0] = static_cast<uint8_t>(c);
        return;
    }
    static const uint8_t lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
    for (int i = n - 1; i > 0; --i) {
        out[i] = static_cast<uint8_t>(0x80 | (c & 0x3f));
        c >>= 6;
    }
    out[0] = static_cast<uint8_t>(lead[n] | c);
}

void utf8_pieces(uint32_t lo, uint32_t hi, GrammarBuilder& b,
                 std::vector<std::vector<Element>>& alts) {
    for (uint32_t edge : {0x7fu, 0x7ffu, 0xffffu})
        if (lo <= edge && edge < hi) {
            utf8_pieces(lo, edge, b, alts);
            utf8_pieces(edge + 1, hi, b, alts);
            return;
        }
    int n = utf8_len(lo);
    for (int i = 1; i < n; ++i) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_pieces(lo, lo | m, b, alts);
                utf8_pieces((lo | m) + 1, hi, b, alts);
                return;
            }
            if ((hi & m) != m) {
                utf8_pieces(lo, (hi & ~m) - 1, b, alts);
                utf8_pieces(hi & ~m, hi, b, alts);
                return;
            }
        }
    }
    uint8_t a[4], z[4];
    encode(lo, a);
    encode(hi, z);
    std::vector<Element> seq;
    for (int i = 0; i < n; ++i) {
        ByteSet s;
        for (int x = a[i]; x <= z[i]; ++x) s.set(x);
        seq.push_back(b.bytes(s));
    }
    alts.push_back(std::move(seq));
}

bool needs_escape(uint32_t c) {
    return c < 0x20 || c == '"' || c == '\\';
}

std::string escape(uint32_t c) {
    switch (c) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        default: {
            static const char* hex = "0123456789abcdef";
            return std::string("\\u00") + hex[c >> 4] + hex[c & 15];
        }
    }
}

}  // namespace

CodeSet normalize(CodeSet set) {
    // Surrogates are not scalar values: cut them out.
    CodeSet cut;
    for (CodeRange r : set) {
        if (r.lo > r.hi || r.lo > kMaxCode) continue;
        r.hi = std::min(r.hi, kMaxCode);
        if (r.hi < 0xd800 || r.lo > 0xdfff) {
            cut.push_back(r);
            continue;
        }
        if (r.lo < 0xd800) cut.push_back({r.lo, 0xd7ff});
        if (r.hi > 0xdfff) cut.push_back({0xe000, r.hi});
    }
    std::sort(cut.begin(), cut.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
    CodeSet out;
    for (CodeRange r : cut) {
        if (!out.empty() && r.lo <= out.back().hi + 1)
            out.back().hi = std::max(out.back().hi, r.hi);
        else
            out.push_back(r);
    }
    return out;
}

CodeSet complement(const CodeSet& set) {
    CodeSet n = normalize(set), out;
    uint32_t next = 0;
    for (CodeRange r : n) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= kMaxCode) out.push_back({next, kMaxCode});
    return normalize(out);
}

CodeSet subtract(const CodeSet& a, const CodeSet& b) {
    CodeSet nb = complement(b), out;
    for (CodeRange x : normalize(a))
        for (CodeRange y : nb) {
            uint32_t lo = std::max(x.lo, y.lo), hi = std::min(x.hi, y.hi);
            if (lo <= hi) out.push_back({lo, hi});
        }
    return normalize(out);
}

std::vector<Element> json_char(GrammarBuilder& b, uint32_t cp) {
    if (needs_escape(cp)) return b.literal(escape(cp));
    uint8_t buf[4];
    encode(cp, buf);
    return b.literal(std::string_view(reinterpret_cast<char*>(buf), utf8_len(cp)));
}

Element json_char_class(GrammarBuilder& b, const CodeSet& set) {
    std::vector<std::vector<Element>> alts;
    for (CodeRange r : normalize(set)) {
        uint32_t lo = r.lo;
        // Characters needing an escape one by one; the rest as UTF-8 ranges.
        while (lo <= r.hi && (lo < 0x20 || lo == '"' || lo == '\\'))
            alts.push_back(json_char(b, lo++));
        while (lo <= r.hi) {
            uint32_t hi = r.hi;
            if (lo < '"' && hi >= '"')
                hi = '"' - 1;
            else if (lo < '\\' && hi >= '\\')
                hi = '\\' - 1;
            utf8_pieces(lo, hi, b, alts);
            lo = hi + 1;
            while (lo <= r.hi && (lo == '"' || lo == '\\')) alts.push_back(json_char(b, lo++));
        }
    }
    RuleId r = b.new_rule();
    for (auto& a : alts) b.add_alt(r, std::move(a));
    return GrammarBuilder::ref(r);
}

Element any_json_string_char(GrammarBuilder& b) {
    RuleId r = b.new_rule();
    b.add_alt(r, {json_char_class(b, subtract({{0x20, kMaxCode}}, {{'"', '"'}, {'\\', '\\'}}))});
    ByteSet simple, hex, hex_low, d, hex_ef, lo7;
    for (char c : std::string("\"\\/bfnrt")) simple.set(static_cast<uint8_t>(c));
    for (char c : std::string("0123456789abcdefABCDEF")) hex.set(static_cast<uint8_t>(c));
    for (char c : std::string("0123456789abcABC")) hex_low.set(static_cast<uint8_t>(c));
    for (char c : std::string("eEfF")) hex_ef.set(static_cast<uint8_t>(c));
    for (char c : std::string("01234567")) lo7.set(static_cast<uint8_t>(c));
    d.set('d');
    d.set('D');
    b.add_alt(r, {b.byte('\\'), b.bytes(simple)});
    Element h = b.bytes(hex);
    b.add_alt(r, {b.byte('\\'), b.byte('u'), b.bytes(hex_low), h, h, h});
    b.add_alt(r, {b.byte('\\'), b.byte('u'), b.bytes(hex_ef), h, h, h});
    b.add_alt(r, {b.byte('\\'), b.byte('u'), b.bytes(d), b.bytes(lo7), h, h});
    return GrammarBuilder::ref(r);
}

}  // namespace myriad::grammar
