#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <new>
#include <vector>

#include "format/json_fields.h"
#include "format/json_file.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad {

namespace {

// Unicode White_Space, as Rust's and Oniguruma's `\s` match it.
constexpr std::string_view kSpaceItems =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

// General-category names PCRE2 knows, and the long names Rust also accepts for them.
std::string_view general_category(std::string_view name) {
    static const std::pair<std::string_view, std::string_view> kLong[] = {
        {"Letter", "L"},
        {"Cased_Letter", "L&"},
        {"Uppercase_Letter", "Lu"},
        {"Lowercase_Letter", "Ll"},
        {"Titlecase_Letter", "Lt"},
        {"Modifier_Letter", "Lm"},
        {"Other_Letter", "Lo"},
        {"Mark", "M"},
        {"Nonspacing_Mark", "Mn"},
        {"Spacing_Mark", "Mc"},
        {"Enclosing_Mark", "Me"},
        {"Number", "N"},
        {"Decimal_Number", "Nd"},
        {"Letter_Number", "Nl"},
        {"Other_Number", "No"},
        {"Punctuation", "P"},
        {"Symbol", "S"},
        {"Separator", "Z"},
        {"Space_Separator", "Zs"},
        {"Other", "C"},
        {"Control", "Cc"},
        {"Format", "Cf"},
        {"Unassigned", "Cn"},
        {"Private_Use", "Co"},
        {"Math_Symbol", "Sm"},
        {"Currency_Symbol", "Sc"},
        {"Modifier_Symbol", "Sk"},
        {"Other_Symbol", "So"},
    };
    if (name.size() <= 2 || name == "L&" || name == "Any" || name == "Xan" || name == "Xps" ||
        name == "Xsp" || name == "Xwd" || name == "Xuc")
        return name;
    for (auto& [l, s] : kLong)
        if (name == l) return s;
    return {};
}

class Translator {
  public:
    Translator(std::string_view p, std::string_view source) : p_(p), source_(source) {}

    std::string run() {
        std::string out;
        while (i_ < p_.size()) {
            char c = p_[i_];
            if (c == '\\') {
                escape(out, /*in_class=*/false);
            } else if (c == '[') {
                out += cls();
            } else {
                out += c;
                ++i_;
            }
        }
        return out;
    }

  private:
    [[noreturn]] void fail(std::string_view what) {
        bad_input("{}: regex {}: {} at offset {}", source_, printable(p_), what, i_);
    }

    // An escape at p_[i_] == '\\', written to `out` in PCRE2 form.
    void escape(std::string& out, bool in_class) {
        if (i_ + 1 >= p_.size()) fail("trailing backslash");
        char e = p_[i_ + 1];
        if (e == 's') {
            out += in_class ? std::string(kSpaceItems) : "[" + std::string(kSpaceItems) + "]";
            i_ += 2;
        } else if (e == 'S' && !in_class) {
            out += "[^" + std::string(kSpaceItems) + "]";
            i_ += 2;
        } else if ((e == 'p' || e == 'P') && i_ + 2 < p_.size() && p_[i_ + 2] == '{') {
            size_t close = p_.find('}', i_ + 3);
            if (close == std::string_view::npos) fail("unterminated \\p{");
            std::string_view name = p_.substr(i_ + 3, close - i_ - 3);
            bool negated = !name.empty() && name[0] == '^';
            if (negated) name.remove_prefix(1);
            out += '\\';
            out += negated ? (e == 'p' ? 'P' : 'p') : e;
            out += '{';
            if (name.find_first_of(":=") != std::string_view::npos) {
                out += name;
            } else if (std::string_view gc = general_category(name); !gc.empty()) {
                out += gc;
            } else {
                out += "sc:";  // a script name: its Script property, as Rust and Oniguruma read it
                out += name;
            }
            out += '}';
            i_ = close + 1;
        } else {
            out += p_.substr(i_, 2);
            i_ += 2;
        }
    }

    // A bracket class at p_[i_] == '['. Nested classes and `&&` are rewritten with look-aheads.
    std::string cls() {
        ++i_;
        bool negated = false;
        if (i_ < p_.size() && p_[i_] == '^') {
            negated = true;
            ++i_;
        }
        // Operands separated by `&&`; each is a union of plain items and nested classes.
        struct Operand {
            std::string items;
            std::vector<std::string> nested;
        };
        std::vector<Operand> ops(1);
        bool first = true;
        for (;;) {
            if (i_ >= p_.size()) fail("unterminated character class");
            char c = p_[i_];
            if (c == ']' && !first) {
                ++i_;
                break;
            }
            first = false;
            if (c == '\\') {
                escape(ops.back().items, /*in_class=*/true);
            } else if (c == '[' && i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
                size_t close = p_.find(":]", i_ + 2);
                if (close == std::string_view::npos) fail("unterminated POSIX class");
                ops.back().items += p_.substr(i_, close + 2 - i_);
                i_ = close + 2;
            } else if (c == '[') {
                ops.back().nested.push_back(cls());
            } else if (c == '&' && i_ + 1 < p_.size() && p_[i_ + 1] == '&') {
                ops.emplace_back();
                i_ += 2;
            } else {
                ops.back().items += c;
                ++i_;
            }
        }
        auto operand = [](const Operand& o) {
            std::string plain = o.items.empty() ? "" : "[" + o.items + "]";
            if (o.nested.empty()) return plain;
            if (plain.empty() && o.nested.size() == 1) return o.nested[0];
            std::string u = "(?:" + plain;
            for (size_t k = 0; k < o.nested.size(); ++k)
                u += (k == 0 && plain.empty() ? "" : "|") + o.nested[k];
            return u + ")";
        };
        bool simple = ops.size() == 1 && ops[0].nested.empty();
        if (simple) return (negated ? "[^" : "[") + ops[0].items + "]";
        std::string one;  // one character in every operand
        if (ops.size() == 1) {
            one = operand(ops[0]);
        } else {
            one = "(?:";
            for (size_t k = 1; k < ops.size(); ++k) one += "(?=" + operand(ops[k]) + ")";
            one += operand(ops[0]) + ")";
        }
        if (one.empty() || one == "[]") fail("empty character class");
        return negated ? "(?:(?!" + one + ")(?s:.))" : one;
    }

    std::string_view p_;
    std::string_view source_;
    size_t i_ = 0;
};

// The JIT stack starts small and grows on demand: a long run of letters without a space (one
// pre-tokenizer piece) needs about a few hundred bytes of stack per character.
constexpr size_t kJitStackStart = 32 * 1024;
constexpr size_t kJitStackFirstMax = 1024 * 1024;
constexpr size_t kJitStackMax = size_t{1} << 30;  // virtual; pages are used as the match needs

// Per-thread match state: PCRE2 needs a match data block and a JIT stack for each matcher.
struct MatchState {
    pcre2_match_data* data = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* stack = nullptr;
    size_t stack_max = kJitStackFirstMax;
    MatchState() {
        data = pcre2_match_data_create(16, nullptr);
        context = pcre2_match_context_create(nullptr);
        if (!data || !context) throw std::bad_alloc();
        set_stack(kJitStackFirstMax);
        // Bounds a pathological pattern's backtracking; the tokenizers' own patterns stay far
        // below.
        pcre2_set_match_limit(context, 50'000'000);
        pcre2_set_depth_limit(context, 100'000);
        pcre2_set_heap_limit(context, 64 * 1024);  // KiB
    }
    // Replaces the JIT stack by one that may grow to `max` bytes.
    void set_stack(size_t max) {
        pcre2_jit_stack* bigger = pcre2_jit_stack_create(kJitStackStart, max, nullptr);
        if (!bigger) throw std::bad_alloc();
        if (stack) pcre2_jit_stack_free(stack);
        stack = bigger;
        stack_max = max;
        pcre2_jit_stack_assign(context, nullptr, stack);
    }
    // A bigger JIT stack after PCRE2_ERROR_JIT_STACKLIMIT; false at the ceiling.
    bool grow_stack() {
        if (stack_max >= kJitStackMax) return false;
        set_stack(std::min(stack_max * 8, kJitStackMax));
        return true;
    }
    ~MatchState() {
        pcre2_jit_stack_free(stack);
        pcre2_match_context_free(context);
        pcre2_match_data_free(data);
    }
};

MatchState& match_state() {
    thread_local MatchState state;
    return state;
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return fmt::format("error {}", code);
    return reinterpret_cast<const char*>(buf);
}

}  // namespace

std::string translate_pattern(std::string_view pattern, std::string_view source) {
    return Translator(pattern, source).run();
}

Regex::Regex(std::string_view pattern, std::string_view source, bool translate)
    : pattern_(translate ? translate_pattern(pattern, source) : std::string(pattern)),
      source_(source) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &err, &offset, nullptr);
    if (!code)
        bad_input("{}: regex {}: {} at offset {}", source_, printable(pattern), pcre2_message(err),
                  offset);
    code_ = code;
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
    pcre2_code_free(static_cast<pcre2_code*>(code_));
}

bool Regex::next_match(std::string_view text, size_t from, size_t* begin, size_t* end) const {
    MatchState& st = match_state();
    auto* code = static_cast<pcre2_code*>(code_);
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    int rc;
    for (;;) {
        rc = jit_ ? pcre2_jit_match(code, subject, text.size(), from, 0, st.data, st.context)
                  : pcre2_match(code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, st.data,
                                st.context);
        if (rc != PCRE2_ERROR_JIT_STACKLIMIT || !st.grow_stack()) break;
    }
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) {
        // The pattern and the file it came from stay in the server's log: a client sees what
        // about its text failed, not the server's paths.
        log::warn("{}: regex {}: matching {} bytes failed: {}", source_, printable(pattern_),
                  text.size() - from, pcre2_message(rc));
        bad_input(
            "the text could not be split into pieces for tokenizing ({}, in a stretch of {} "
            "bytes); shorten runs of text without spaces or punctuation",
            pcre2_message(rc), text.size() - from);
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    *begin = ov[0];
    *end = ov[1];
    // \K in a look-ahead can report a match that ends before it starts; treat it as empty.
    if (*end < *begin) *end = *begin;
    return true;
}

size_t Regex::advance(std::string_view text, size_t pos) {
    if (pos >= text.size()) return text.size() + 1;
    ++pos;
    while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xc0) == 0x80) ++pos;
    return pos;
}

// A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}.
std::unique_ptr<Regex> make_pattern(const nlohmann::ordered_json& j, const std::string& source,
                                    const std::string& field) {
    JsonFields f(j, source, field + ".");
    if (f.has("Regex"))
        return std::make_unique<Regex>(f.string("Regex"), source + ": field " + field + ".Regex");
    if (f.has("String")) {
        std::string lit = f.string("String");
        if (lit.empty()) f.fail("String", "is empty");
        std::string escaped;
        for (char c : lit) {
            auto u = static_cast<unsigned char>(c);
            if (u < 0x80 && !std::isalnum(u)) escaped += '\\';
            escaped += c;
        }
        return std::make_unique<Regex>(escaped, source + ": field " + field + ".String",
                                       /*translate=*/false);
    }
    bad_input("{}: field {} has neither \"String\" nor \"Regex\"", source, field);
}

}  // namespace myriad
