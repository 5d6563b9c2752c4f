// Recursive descent over the pattern, building grammar directly. Characters are code points
// (the pattern is UTF-8) and become canonical JSON text through json_text.
#include "grammar/regex_grammar.h"

#include <optional>

#include "grammar/json_text.h"
#include "util/error.h"

namespace myriad::grammar {
namespace {

const CodeSet kDigit = {{'0', '9'}};
const CodeSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// \s: what both ECMA-262 and Python's re call white space (Python leaves out U+FEFF).
const CodeSet kSpace = {{'\t', '\r'},     {' ', ' '},       {0xa0, 0xa0},
                        {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029},
                        {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}};
// \D \W \S: the complement within ASCII only (Python's re, jsonschema's engine, treats Unicode
// digits and letters as \d and \w, so a wider complement could produce a non-matching text).
CodeSet ascii_complement(const CodeSet& s) {
    return subtract({{0, 0x7f}}, s);
}

class Parser {
  public:
    Parser(GrammarBuilder& b, std::string_view p, const std::string& where)
        : b_(b), p_(p), where_(where) {}

    Element top() {
        std::vector<std::vector<Element>> alts;
        do {
            std::vector<Element> seq;
            bool anchored_start = eat('^');
            if (!anchored_start) seq.push_back(any_text());
            auto body = sequence(true);
            bool anchored_end = eat('$');
            seq.insert(seq.end(), body.begin(), body.end());
            if (!anchored_end) seq.push_back(any_text());
            if (!at_end() && peek() != '|') fail("an anchor ('^' or '$') inside the pattern");
            alts.push_back(std::move(seq));
        } while (eat('|'));
        if (!at_end()) fail("an unbalanced ')'");
        return b_.choice(std::move(alts));
    }

  private:
    [[noreturn]] void fail(const std::string& what) {
        bad_input("{}: {} is not supported (at offset {} of \"{}\")", where_, what, i_,
                  std::string(p_));
    }
    bool at_end() const { return i_ >= p_.size(); }
    char peek() const { return p_[i_]; }
    bool eat(char c) {
        if (!at_end() && p_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    Element any_text() {
        if (!any_) any_ = b_.star(json_char_class(b_, {{0, 0x10ffff}}));
        return *any_;
    }

    uint32_t code_point() {
        unsigned char c = static_cast<unsigned char>(p_[i_++]);
        if (c < 0x80) return c;
        int n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : -1;
        if (n < 0) fail("invalid UTF-8");
        uint32_t cp = c & (0x3f >> n);
        for (int k = 0; k < n; ++k) {
            if (at_end() || (static_cast<unsigned char>(p_[i_]) & 0xc0) != 0x80)
                fail("invalid UTF-8");
            cp = (cp << 6) | (static_cast<unsigned char>(p_[i_++]) & 0x3f);
        }
        return cp;
    }

    std::vector<Element> alternation() {
        std::vector<std::vector<Element>> alts;
        do alts.push_back(sequence(false));
        while (eat('|'));
        return {b_.choice(std::move(alts))};
    }

    std::vector<Element> sequence(bool top_level) {
        std::vector<Element> seq;
        while (!at_end()) {
            char c = peek();
            if (c == '|' || c == ')') break;
            if (c == '$' && top_level) break;
            if (c == '^' || c == '$') fail("an anchor ('^' or '$') inside the pattern");
            Element atom = this->atom();
            quantified(atom, seq);
        }
        return seq;
    }

    void quantified(Element atom, std::vector<Element>& seq) {
        int64_t min = 1, max = 1;
        if (eat('*'))
            min = 0, max = -1;
        else if (eat('+'))
            min = 1, max = -1;
        else if (eat('?'))
            min = 0, max = 1;
        else if (!at_end() && peek() == '{' && counted(min, max)) {
        } else {
            seq.push_back(atom);
            return;
        }
        eat('?');  // lazy: the same set of strings
        if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
            fail("a quantifier after a quantifier");
        auto r = b_.repeat(atom, min, max);
        seq.insert(seq.end(), r.begin(), r.end());
    }

    // {n}, {n,}, {n,m}; anything else is a literal '{' (as in ECMA's annex B).
    bool counted(int64_t& min, int64_t& max) {
        size_t j = i_ + 1;
        auto number = [&](int64_t& v) {
            size_t s = j;
            v = 0;
            while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && j - s < 7)
                v = v * 10 + (p_[j++] - '0');
            return j > s;
        };
        if (!number(min)) return false;
        max = min;
        if (j < p_.size() && p_[j] == ',') {
            ++j;
            if (!number(max)) max = -1;
        }
        if (j >= p_.size() || p_[j] != '}') return false;
        if (max >= 0 && max < min) fail("a repetition {n,m} with m < n");
        if (min > 10000 || max > 10000) fail("a repetition count above 10000");
        i_ = j + 1;
        return true;
    }

    Element atom() {
        char c = p_[i_];
        if (c == '(') {
            ++i_;
            if (eat('?')) {
                if (!eat(':')) fail("a lookaround or named group ('(?')");
            }
            auto inner = alternation();
            if (!eat(')')) fail("an unclosed '('");
            return inner[0];
        }
        if (c == '[') return b_.group({json_char_class(b_, char_class())});
        if (c == '.') {
            ++i_;
            return json_char_class(b_, complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
        }
        if (c == '*' || c == '+' || c == '?') fail("a quantifier with nothing to repeat");
        if (c == '\\') {
            ++i_;
            CodeSet set = escape(false);
            return json_char_class(b_, set);
        }
        if (c == '{') {
            int64_t a, z;
            if (counted(a, z)) fail("a quantifier with nothing to repeat");
        }
        uint32_t cp = code_point();
        return b_.group(json_char(b_, cp));
    }

    // After a backslash: a class escape or one code point as a set.
    CodeSet escape(bool in_class) {
        if (at_end()) fail("a trailing backslash");
        char c = p_[i_++];
        switch (c) {
            case 'd':
                return kDigit;
            case 'D':
                return ascii_complement(kDigit);
            case 'w':
                return kWord;
            case 'W':
                return ascii_complement(kWord);
            case 's':
                return kSpace;
            case 'S':
                return ascii_complement(kSpace);
            case 'n':
                return {{'\n', '\n'}};
            case 'r':
                return {{'\r', '\r'}};
            case 't':
                return {{'\t', '\t'}};
            case 'f':
                return {{'\f', '\f'}};
            case 'v':
                return {{'\v', '\v'}};
            case '0':
                return {{0, 0}};
            case 'b':
                if (in_class) return {{'\b', '\b'}};
                fail("a word boundary ('\\b')");
            case 'x':
            case 'u': {
                int n = c == 'x' ? 2 : 4;
                uint32_t v = 0;
                for (int k = 0; k < n; ++k) {
                    if (at_end() || !isxdigit(static_cast<unsigned char>(p_[i_])))
                        fail("a malformed \\x or \\u escape");
                    char h = p_[i_++];
                    v = v * 16 + (isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                         : (tolower(h) - 'a' + 10));
                }
                return {{v, v}};
            }
            default:
                if (isalnum(static_cast<unsigned char>(c)))
                    fail(std::string("the escape '\\") + c + "'");
                --i_;
                uint32_t cp = code_point();
                return {{cp, cp}};
        }
    }

    CodeSet char_class() {
        ++i_;  // '['
        bool negate = eat('^');
        CodeSet set;
        bool first = true;
        while (true) {
            if (at_end()) fail("an unclosed '['");
            if (peek() == ']' && !first) {
                ++i_;
                break;
            }
            first = false;
            CodeSet lo_set;
            if (eat('\\'))
                lo_set = escape(true);
            else
                lo_set = {{code_point(), 0}}, lo_set[0].hi = lo_set[0].lo;
            if (!at_end() && peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']' &&
                lo_set.size() == 1 && lo_set[0].lo == lo_set[0].hi) {
                ++i_;
                CodeSet hi_set;
                if (eat('\\'))
                    hi_set = escape(true);
                else
                    hi_set = {{code_point(), 0}}, hi_set[0].hi = hi_set[0].lo;
                if (hi_set.size() != 1 || hi_set[0].lo != hi_set[0].hi ||
                    hi_set[0].lo < lo_set[0].lo)
                    fail("a malformed class range");
                set.push_back({lo_set[0].lo, hi_set[0].lo});
            } else {
                set.insert(set.end(), lo_set.begin(), lo_set.end());
            }
        }
        return negate ? complement(set) : normalize(set);
    }

    GrammarBuilder& b_;
    std::string_view p_;
    const std::string& where_;
    size_t i_ = 0;
    std::optional<Element> any_;
};

}  // namespace

Element regex_grammar(GrammarBuilder& b, std::string_view pattern, const std::string& where) {
    return Parser(b, pattern, where).top();
}

}  // namespace myriad::grammar
