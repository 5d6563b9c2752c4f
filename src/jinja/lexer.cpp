#include "jinja/lexer.h"

#include <array>
#include <cstdlib>

#include "jinja/text.h"

namespace myriad::jinja {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}
int hex_value(char32_t c) {
    if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
    return -1;
}

// Longest first, so that "//" wins over "/".
constexpr std::array<std::string_view, 26> kOperators = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
    "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
  public:
    Lexer(std::string source, const LexOptions& o) : src_(std::move(source)), opt_(o) {}

    std::vector<Token> run() {
        size_t pos = 0, n = src_.size();
        bool line_starting = true;
        while (pos < n) {
            size_t t = find_tag(pos);
            if (t == std::string::npos) {
                emit_data(pos, n);
                break;
            }
            char kind = src_[t + 1];
            size_t after = t + 2;
            char sign = after < n && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
            size_t raw_end = kind == '%' ? match_raw_begin(t) : 0;
            std::string text = src_.substr(pos, t - pos);
            if (sign == '-') {
                text = rstrip_space(text);
            } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
                size_t l_pos = text.rfind('\n');
                l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
                if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos)))
                    text.resize(l_pos);
            }
            if (!text.empty()) push(Tok::Data, std::move(text), pos);
            if (raw_end) {
                pos = lex_raw(t, raw_end, line_starting);
            } else if (kind == '#') {
                pos = lex_comment(t, after + (sign ? 1 : 0), line_starting);
            } else {
                pos = lex_tag(t, kind == '%', after + (sign ? 1 : 0), line_starting);
            }
        }
        tokens_.push_back(Token{Tok::Eof, "", 0, 0, pos_at(n)});
        return std::move(tokens_);
    }

  private:
    [[noreturn]] void error(size_t at, const std::string& msg) {
        throw TemplateError(pos_at(at), msg);
    }

    // Line and column of byte `at`; calls come in increasing order, so this walks forward.
    Pos pos_at(size_t at) {
        if (at < cursor_) cursor_ = 0, line_ = 1, col_ = 1;
        for (; cursor_ < at && cursor_ < src_.size(); ++cursor_) {
            char c = src_[cursor_];
            if (c == '\n') {
                ++line_, col_ = 1;
            } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
                ++col_;
            }
        }
        return Pos{line_, col_};
    }

    void push(Tok type, std::string value, size_t at) {
        Token t;
        t.type = type;
        t.value = std::move(value);
        t.pos = pos_at(at);
        tokens_.push_back(std::move(t));
    }

    void emit_data(size_t b, size_t e) {
        if (e > b) push(Tok::Data, src_.substr(b, e - b), b);
    }

    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() &&
                (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
                return i;
        return std::string::npos;
    }

    // Length of the Python-whitespace run at `at`.
    size_t space_len(size_t at) const {
        size_t i = at;
        while (i < src_.size()) {
            size_t j = i;
            if (!text::is_space(text::next_cp(src_, j))) break;
            i = j;
        }
        return i - at;
    }

    static bool all_space(std::string_view s) {
        for (size_t i = 0; i < s.size();)
            if (!text::is_space(text::next_cp(s, i))) return false;
        return true;
    }

    static std::string rstrip_space(const std::string& s) {
        return text::strip(s, std::nullopt, false, true);
    }

    bool at(size_t i, std::string_view s) const { return src_.compare(i, s.size(), s) == 0; }

    // `{%[-+]?\s*raw\s*(-%}\s*|%})` at t: the end of the match, or 0.
    size_t match_raw_begin(size_t t) const {
        size_t i = t + 2;
        if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
        i += space_len(i);
        if (!at(i, "raw")) return 0;
        i += 3;
        i += space_len(i);
        if (at(i, "-%}")) return i + 3 + space_len(i + 3);
        if (at(i, "%}")) return i + 2;
        return 0;
    }

    size_t lex_raw(size_t t, size_t body, bool& line_starting) {
        // The body runs to `{%[-+]?\s*endraw\s*(+%}|-%}\s*|%}\n?)`.
        for (size_t b = src_.find("{%", body); b != std::string::npos; b = src_.find("{%", b + 1)) {
            size_t i = b + 2;
            char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
            if (sign) ++i;
            i += space_len(i);
            if (!at(i, "endraw")) continue;
            i += 6;
            i += space_len(i);
            size_t end = 0;
            if (at(i, "+%}")) {
                end = i + 3;
            } else if (at(i, "-%}")) {
                end = i + 3 + space_len(i + 3);
            } else if (at(i, "%}")) {
                end = i + 2;
                if (opt_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
            } else {
                continue;
            }
            std::string text = src_.substr(body, b - body);
            if (sign == '-') text = rstrip_space(text);
            if (!text.empty()) push(Tok::Data, std::move(text), body);
            line_starting = src_[end - 1] == '\n';
            return end;
        }
        error(t, "missing end of raw directive");
    }

    size_t lex_comment(size_t t, size_t body, bool& line_starting) {
        size_t e = src_.find("#}", body);
        if (e == std::string::npos) error(t, "missing end of comment tag");
        size_t end = e + 2;
        if (e > body && src_[e - 1] == '-') {
            end += space_len(end);
        } else if (!(e > body && src_[e - 1] == '+') && opt_.trim_blocks && end < src_.size() &&
                   src_[end] == '\n') {
            ++end;
        }
        line_starting = src_[end - 1] == '\n';
        return end;
    }

    size_t lex_tag(size_t t, bool block, size_t i, bool& line_starting) {
        push(block ? Tok::BlockBegin : Tok::VarBegin, block ? "{%" : "{{", t);
        std::string balance;
        size_t n = src_.size();
        while (true) {
            if (i >= n)
                error(t, block ? "unexpected end of template: the '{%' tag has no '%}'"
                               : "unexpected end of template: the '{{' tag has no '}}'");
            if (balance.empty()) {
                size_t end = block ? match_block_end(i) : match_var_end(i);
                if (end) {
                    push(block ? Tok::BlockEnd : Tok::VarEnd, block ? "%}" : "}}", i);
                    line_starting = src_[end - 1] == '\n';
                    return end;
                }
            }
            if (size_t w = space_len(i)) {
                i += w;
                continue;
            }
            char c = src_[i];
            if (is_digit(c)) {
                i = lex_number(i);
            } else if (is_name_start(c) || static_cast<unsigned char>(c) >= 0x80) {
                i = lex_name(i);
            } else if (c == '\'' || c == '"') {
                i = lex_string(i);
            } else {
                i = lex_operator(i, balance);
            }
        }
    }

    size_t match_block_end(size_t i) const {
        if (at(i, "-%}")) return i + 3 + space_len(i + 3);
        if (at(i, "+%}")) return i + 3;
        if (at(i, "%}")) {
            size_t e = i + 2;
            if (opt_.trim_blocks && e < src_.size() && src_[e] == '\n') ++e;
            return e;
        }
        return 0;
    }

    size_t match_var_end(size_t i) const {
        if (at(i, "-}}")) return i + 3 + space_len(i + 3);
        if (at(i, "}}")) return i + 2;
        return 0;
    }

    // `(\d+_)*\d+` at i: its end, or i when absent.
    size_t digits(size_t i, int base = 10) const {
        auto ok = [&](char c) {
            return hex_value(static_cast<unsigned char>(c)) >= 0 &&
                   hex_value(static_cast<unsigned char>(c)) < base;
        };
        size_t j = i;
        while (j < src_.size() && ok(src_[j])) {
            ++j;
            if (j + 1 < src_.size() && src_[j] == '_' && ok(src_[j + 1])) ++j;
        }
        return j;
    }

    size_t lex_number(size_t i) {
        size_t n = src_.size();
        // Float: digits followed by a fraction and/or an exponent (not right after a '.').
        if (i == 0 || src_[i - 1] != '.') {
            size_t j = digits(i);
            size_t frac = j;
            if (j + 1 < n && src_[j] == '.' && is_digit(src_[j + 1])) frac = digits(j + 1);
            size_t exp = frac;
            if (exp < n && (src_[exp] == 'e' || src_[exp] == 'E')) {
                size_t k = exp + 1;
                if (k < n && (src_[k] == '+' || src_[k] == '-')) ++k;
                if (k < n && is_digit(src_[k])) exp = digits(k);
            }
            if (exp > j) {
                std::string s;
                for (size_t k = i; k < exp; ++k)
                    if (src_[k] != '_') s += src_[k];
                Token t;
                t.type = Tok::Float;
                t.float_value = std::strtod(s.c_str(), nullptr);
                t.pos = pos_at(i);
                tokens_.push_back(std::move(t));
                return exp;
            }
        }
        int base = 10;
        size_t start = i, j;
        char p = i + 1 < n ? static_cast<char>(src_[i + 1] | 0x20) : 0;
        if (src_[i] == '0' && (p == 'b' || p == 'o' || p == 'x')) {
            base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
            start = i + 2;
            if (start < n && src_[start] == '_') ++start;
            j = digits(start, base);
            if (j == start) error(i, "invalid integer literal");
        } else if (src_[i] == '0') {
            j = i + 1;  // `0(_?0)*`
            while (j < n && (src_[j] == '0' || (src_[j] == '_' && j + 1 < n && src_[j + 1] == '0')))
                ++j;
        } else {
            j = digits(i);
        }
        uint64_t v = 0;
        for (size_t k = start; k < j; ++k) {
            if (src_[k] == '_') continue;
            int d = hex_value(static_cast<unsigned char>(src_[k]));
            if (v > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / base)
                error(i, "integer literal too large (more than 64 bits)");
            v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
        }
        Token t;
        t.type = Tok::Integer;
        t.int_value = static_cast<int64_t>(v);
        t.pos = pos_at(i);
        tokens_.push_back(std::move(t));
        return j;
    }

    size_t lex_name(size_t i) {
        size_t j = i;
        while (j < src_.size()) {
            if (is_name_char(src_[j])) {
                ++j;
                continue;
            }
            if (static_cast<unsigned char>(src_[j]) < 0x80) break;
            size_t k = j;
            char32_t cp = text::next_cp(src_, k);
            if (!text::is_alpha(cp) && !(j > i && text::is_digit(cp))) break;
            j = k;
        }
        if (j == i) {
            size_t k = i;
            text::next_cp(src_, k);
            error(i, "unexpected char '" + src_.substr(i, k - i) + "'");
        }
        push(Tok::Name, src_.substr(i, j - i), i);
        return j;
    }

    size_t lex_string(size_t i) {
        char q = src_[i];
        size_t j = i + 1, n = src_.size();
        while (j < n && src_[j] != q) j += src_[j] == '\\' ? 2 : 1;
        if (j >= n) error(i, std::string("unexpected char '") + q + "': the string is not closed");
        Token t;
        t.type = Tok::String;
        t.pos = pos_at(i);
        t.value = decode_string(std::string_view(src_).substr(i + 1, j - i - 1), i);
        tokens_.push_back(std::move(t));
        return j + 1;
    }

    // Python's unicode-escape decoding, as jinja2 applies it to string literals.
    std::string decode_string(std::string_view s, size_t at) {
        std::string out;
        static const char* hex = "0123456789abcdef";
        for (size_t i = 0; i < s.size();) {
            char32_t c = text::next_cp(s, i);
            if (c != '\\' || i >= s.size()) {
                text::append_utf8(out, c);
                continue;
            }
            char32_t d = text::next_cp(s, i);
            auto read_hex = [&](int count) {
                char32_t v = 0;
                for (int k = 0; k < count; ++k) {
                    int h = i < s.size() ? hex_value(static_cast<unsigned char>(s[i])) : -1;
                    if (h < 0)
                        error(at, "invalid escape in string literal (truncated \\x, \\u or \\U)");
                    v = v * 16 + static_cast<char32_t>(h);
                    ++i;
                }
                return v;
            };
            switch (d) {
                case '\n':
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '\'':
                    out += '\'';
                    break;
                case '"':
                    out += '"';
                    break;
                case 'a':
                    out += '\a';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'v':
                    out += '\v';
                    break;
                case 'x':
                    text::append_utf8(out, read_hex(2));
                    break;
                case 'u':
                case 'U': {
                    char32_t v = read_hex(d == 'u' ? 4 : 8);
                    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
                        error(at,
                              "string literal escapes a surrogate or a code point past U+10FFFF");
                    text::append_utf8(out, v);
                    break;
                }
                case 'N':
                    error(at, "\\N{...} escapes are not supported");
                default:
                    if (d >= '0' && d <= '7') {
                        char32_t v = d - '0';
                        for (int k = 0; k < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k)
                            v = v * 8 + static_cast<char32_t>(s[i++] - '0');
                        text::append_utf8(out, v);
                    } else if (d >= 0x80) {
                        // jinja2 backslash-escapes non-ASCII first: "\é" reads as "\xe9".
                        int digits = d <= 0xFF ? 2 : d <= 0xFFFF ? 4 : 8;
                        out += '\\';
                        out += digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
                        for (int k = digits - 1; k >= 0; --k) out += hex[(d >> (4 * k)) & 0xF];
                    } else {
                        out += '\\';
                        text::append_utf8(out, d);
                    }
            }
        }
        return out;
    }

    size_t lex_operator(size_t i, std::string& balance) {
        for (std::string_view op : kOperators) {
            if (!at(i, op)) continue;
            char c = op[0];
            if (op.size() == 1 && (c == '(' || c == '[' || c == '{')) {
                if (balance.size() >= 256) error(i, "brackets nested too deep");
                balance += c == '(' ? ')' : c == '[' ? ']' : '}';
            } else if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
                if (balance.empty()) error(i, std::string("unexpected '") + c + "'");
                if (balance.back() != c)
                    error(i,
                          std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
                balance.pop_back();
            }
            push(Tok::Op, std::string(op), i);
            return i + op.size();
        }
        size_t k = i;
        text::next_cp(src_, k);
        error(i, "unexpected char '" + src_.substr(i, k - i) + "'");
    }

    std::string src_;
    LexOptions opt_;
    std::vector<Token> tokens_;
    size_t cursor_ = 0;
    int line_ = 1, col_ = 1;
};

std::string normalize_newlines(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            out += '\n';
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            out += s[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
    return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
    if (!text::valid_utf8(source)) throw TemplateError(Pos{1, 1}, "template is not valid UTF-8");
    return Lexer(normalize_newlines(source), options).run();
}

std::string describe(const Token& t) {
    switch (t.type) {
        case Tok::Data:
            return "template data";
        case Tok::VarBegin:
            return "begin of print statement";
        case Tok::VarEnd:
            return "end of print statement";
        case Tok::BlockBegin:
            return "begin of statement block";
        case Tok::BlockEnd:
            return "end of statement block";
        case Tok::Name:
            return "'" + t.value + "'";
        case Tok::String:
            return "string";
        case Tok::Integer:
            return "integer";
        case Tok::Float:
            return "float";
        case Tok::Op:
            return "'" + t.value + "'";
        case Tok::Eof:
            return "end of template";
    }
    return "token";
}

}  // namespace myriad::jinja
