// Decimal ranges: [lo, hi] of non-negative integers written without leading zeros, split by
// digit count and then digit by digit (the classic range-to-regex construction).
#include "grammar/number_grammar.h"

#include <string>
#include <vector>

namespace myriad::grammar {
namespace {

using Seqs = std::vector<std::vector<Element>>;

Element digits(GrammarBuilder& b, char lo, char hi) {
    ByteSet s;
    for (char c = lo; c <= hi; ++c) s.set(static_cast<uint8_t>(c));
    return b.bytes(s);
}

// Equal-length decimal strings a <= b.
void same_length(GrammarBuilder& b, const std::string& lo, const std::string& hi,
                 std::vector<Element> prefix, Seqs& out) {
    size_t n = lo.size();
    if (n == 0) {
        out.push_back(std::move(prefix));
        return;
    }
    std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    if (lo[0] == hi[0]) {
        prefix.push_back(digits(b, lo[0], lo[0]));
        same_length(b, lo_rest, hi_rest, std::move(prefix), out);
        return;
    }
    if (lo_rest == std::string(n - 1, '0') && hi_rest == std::string(n - 1, '9')) {
        prefix.push_back(digits(b, lo[0], hi[0]));
        for (size_t i = 1; i < n; ++i) prefix.push_back(digits(b, '0', '9'));
        out.push_back(std::move(prefix));
        return;
    }
    auto p = prefix;
    p.push_back(digits(b, lo[0], lo[0]));
    same_length(b, lo_rest, std::string(n - 1, '9'), std::move(p), out);
    if (lo[0] + 1 <= hi[0] - 1) {
        p = prefix;
        p.push_back(digits(b, lo[0] + 1, hi[0] - 1));
        for (size_t i = 1; i < n; ++i) p.push_back(digits(b, '0', '9'));
        out.push_back(std::move(p));
    }
    p = prefix;
    p.push_back(digits(b, hi[0], hi[0]));
    same_length(b, std::string(n - 1, '0'), hi_rest, std::move(p), out);
}

uint64_t pow10(size_t n) {
    uint64_t v = 1;
    while (n--) v *= 10;
    return v;
}

// Non-negative integers in [lo, hi] (hi absent: unbounded), appended to `out`.
void range(GrammarBuilder& b, uint64_t lo, std::optional<uint64_t> hi, Seqs& out) {
    if (hi && *hi < lo) return;
    size_t lo_len = std::to_string(lo).size();
    size_t hi_len = hi ? std::to_string(*hi).size() : lo_len;
    for (size_t len = lo_len; len <= hi_len; ++len) {
        uint64_t a = std::max(lo, len == 1 ? 0 : pow10(len - 1));
        uint64_t z = len >= 20 ? ~uint64_t{0} : pow10(len) - 1;
        if (hi) z = std::min(z, *hi);
        if (a > z) continue;
        same_length(b, std::to_string(a), std::to_string(z), {}, out);
    }
    if (!hi) {
        // Every longer number: [1-9][0-9]{lo_len}[0-9]*.
        std::vector<Element> seq{digits(b, '1', '9')};
        for (size_t i = 0; i < lo_len; ++i) seq.push_back(digits(b, '0', '9'));
        seq.push_back(b.star(digits(b, '0', '9')));
        out.push_back(std::move(seq));
    }
}

Element choice_or_nothing(GrammarBuilder& b, Seqs alts) {
    RuleId r = b.new_rule();
    for (auto& a : alts) b.add_alt(r, std::move(a));
    return GrammarBuilder::ref(r);
}

enum class Frac { Any, Zero, NonZero };

struct Piece {
    uint64_t lo;
    std::optional<uint64_t> hi;
    Frac frac;
};

Element frac_grammar(GrammarBuilder& b, Frac f) {
    Element dot = b.byte('.');
    Element digit = digits(b, '0', '9');
    switch (f) {
        case Frac::Any:
            return b.optional(b.group({dot, digit, b.star(digit)}));
        case Frac::Zero:
            return b.optional(b.group({dot, b.byte('0'), b.star(b.byte('0'))}));
        case Frac::NonZero:
            return b.group({dot, b.star(b.byte('0')), digits(b, '1', '9'), b.star(digit)});
    }
    return dot;
}

// Constraints on a magnitude m = I + f (I the integer part, f the fraction) as pieces.
std::vector<Piece> at_least(uint64_t a, bool exclusive) {
    if (!exclusive) return {{a, std::nullopt, Frac::Any}};
    return {{a + 1, std::nullopt, Frac::Any}, {a, a, Frac::NonZero}};
}
std::vector<Piece> at_most(uint64_t z, bool exclusive) {
    std::vector<Piece> out;
    if (z > 0) out.push_back({0, z - 1, Frac::Any});
    if (!exclusive) out.push_back({z, z, Frac::Zero});
    return out;
}

void intersect(GrammarBuilder& b, const std::vector<Piece>& x, const std::vector<Piece>& y,
               std::vector<Element> prefix, Seqs& out) {
    for (const Piece& p : x)
        for (const Piece& q : y) {
            uint64_t lo = std::max(p.lo, q.lo);
            std::optional<uint64_t> hi = p.hi;
            if (q.hi && (!hi || *q.hi < *hi)) hi = q.hi;
            if (hi && *hi < lo) continue;
            Frac f = p.frac == Frac::Any ? q.frac : q.frac == Frac::Any ? p.frac : p.frac;
            if (p.frac != Frac::Any && q.frac != Frac::Any && p.frac != q.frac) continue;
            Seqs ints;
            range(b, lo, hi, ints);
            if (ints.empty()) continue;
            auto seq = prefix;
            seq.push_back(choice_or_nothing(b, std::move(ints)));
            seq.push_back(frac_grammar(b, f));
            out.push_back(std::move(seq));
        }
}

uint64_t magnitude(int64_t v) {
    return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : v;
}

}  // namespace

Element integer_grammar(GrammarBuilder& b, std::optional<int64_t> min, std::optional<int64_t> max) {
    Seqs alts;
    if (!max || *max >= 0) {
        Seqs pos;
        range(b, min && *min > 0 ? *min : 0,
              max ? std::optional<uint64_t>(static_cast<uint64_t>(*max)) : std::nullopt, pos);
        for (auto& s : pos) alts.push_back(std::move(s));
    }
    if (!min || *min < 0) {
        // -m for magnitudes m in [max(1, -max), -min]; "-0" (which is 0) only when unbounded.
        bool zero = !min && !max;  // as llguidance: "-0" only without bounds
        uint64_t lo = max && *max < 0 ? magnitude(*max) : zero ? 0 : 1;
        Seqs neg;
        range(b, lo, min ? std::optional<uint64_t>(magnitude(*min)) : std::nullopt, neg);
        if (!neg.empty()) alts.push_back({b.byte('-'), choice_or_nothing(b, std::move(neg))});
    }
    return choice_or_nothing(b, std::move(alts));
}

Element number_grammar(GrammarBuilder& b, std::optional<Bound> min, std::optional<Bound> max) {
    if (!min && !max) {
        Element digit = digits(b, '0', '9');
        Element int_part = b.choice({{b.byte('0')}, {digits(b, '1', '9'), b.star(digit)}});
        ByteSet e, sign;
        e.set('e'), e.set('E'), sign.set('+'), sign.set('-');
        return b.group(
            {b.optional(b.byte('-')), int_part, frac_grammar(b, Frac::Any),
             b.optional(b.group({b.bytes(e), b.optional(b.bytes(sign)), digit, b.star(digit)}))});
    }
    Seqs alts;
    // v >= 0, written without a sign.
    bool nonneg = !max || max->value > 0 || (max->value == 0 && !max->exclusive);
    if (nonneg) {
        std::vector<Piece> lower = {{0, std::nullopt, Frac::Any}};
        if (min && (min->value > 0 || (min->value == 0 && min->exclusive)))
            lower = at_least(static_cast<uint64_t>(min->value), min->exclusive);
        std::vector<Piece> upper = {{0, std::nullopt, Frac::Any}};
        if (max) upper = at_most(static_cast<uint64_t>(max->value), max->exclusive);
        intersect(b, lower, upper, {}, alts);
    }
    // v < 0: "-" and a magnitude m > 0.
    if (!min || min->value < 0) {
        std::vector<Piece> lower = {{1, std::nullopt, Frac::Any}, {0, 0, Frac::NonZero}};
        if (max && max->value < 0) lower = at_least(magnitude(max->value), max->exclusive);
        std::vector<Piece> upper = {{0, std::nullopt, Frac::Any}};
        if (min) upper = at_most(magnitude(min->value), min->exclusive);
        intersect(b, lower, upper, {b.byte('-')}, alts);
    }
    return choice_or_nothing(b, std::move(alts));
}

}  // namespace myriad::grammar
