#include "jinja/text.h"

#include "jinja/item_limit.h"
#include "jinja/value.h"

#include <locale.h>
#include <clocale>
#include <cwctype>

#include <algorithm>

namespace myriad::jinja::text {

bool valid_utf8(std::string_view s) {
    size_t i = 0, n = s.size();
    while (i < n) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        char32_t cp = 0, min = 0;
        if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (int k = 1; k < len; ++k) {
            auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

bool is_ascii(std::string_view s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

char32_t next_cp(std::string_view s, size_t& i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
        ++i;
        return c;
    }
    int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    char32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (int k = 1; k < len && i + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    return cp;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::vector<char32_t> code_points(std::string_view s) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) out.push_back(next_cp(s, i));
    return out;
}

size_t length(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

size_t byte_offset(std::string_view s, size_t index) {
    size_t i = 0;
    for (size_t k = 0; k < index && i < s.size(); ++k) next_cp(s, i);
    return i;
}

std::vector<size_t> offsets(std::string_view s) {
    std::vector<size_t> out;
    out.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size();) {
        out.push_back(i);
        next_cp(s, i);
    }
    out.push_back(s.size());
    return out;
}

bool is_space(char32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_printable(char32_t cp) {
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0)) return false;
    if (cp < 0x7F) return true;
    if (cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
        (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 ||
        cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xFFFE || cp == 0xFFFF)
        return false;
    if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61C || cp == 0x6DD || cp == 0x70F || cp == 0x180E)
        return false;
    if ((cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xF0000) return false;  // surrogates, private
    if (cp >= 0xE0000 && cp <= 0xE0FFF) return false;                   // tags
    return true;
}

namespace {

// glibc's C.UTF-8 locale knows Unicode's simple case mappings; "C" only ASCII's.
locale_t utf8_locale() {
    static locale_t loc = [] {
        locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
        if (!l) l = newlocale(LC_CTYPE_MASK, "C.utf8", static_cast<locale_t>(nullptr));
        return l;
    }();
    return loc;
}

template <typename F>
std::string map_cps(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) append_utf8(out, f(next_cp(s, i)));
    return out;
}

bool in_set(char32_t cp, const std::vector<char32_t>& set) {
    return std::find(set.begin(), set.end(), cp) != set.end();
}

}  // namespace

char32_t to_upper(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    locale_t l = utf8_locale();
    return l ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(cp), l)) : cp;
}

char32_t to_lower(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    locale_t l = utf8_locale();
    return l ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(cp), l)) : cp;
}

bool is_cased(char32_t cp) {
    return to_upper(cp) != cp || to_lower(cp) != cp;
}

bool is_alpha(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    locale_t l = utf8_locale();
    return l && iswalpha_l(static_cast<wint_t>(cp), l);
}

bool is_digit(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    locale_t l = utf8_locale();
    return l && iswdigit_l(static_cast<wint_t>(cp), l);
}

std::string upper(std::string_view s) {
    return map_cps(s, to_upper);
}
std::string lower(std::string_view s) {
    return map_cps(s, to_lower);
}

std::string capitalize(std::string_view s) {
    bool first = true;
    return map_cps(s, [&](char32_t cp) {
        char32_t r = first ? to_upper(cp) : to_lower(cp);
        first = false;
        return r;
    });
}

std::string py_title(std::string_view s) {
    bool prev_cased = false;
    return map_cps(s, [&](char32_t cp) {
        char32_t r = prev_cased ? to_lower(cp) : to_upper(cp);
        prev_cased = is_cased(cp);
        return r;
    });
}

std::string jinja_title(std::string_view s) {
    // Words begin after runs of "-", whitespace, "(", "{", "[" or "<".
    bool at_start = true;
    return map_cps(s, [&](char32_t cp) {
        bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_space(cp);
        char32_t r = sep ? cp : at_start ? to_upper(cp) : to_lower(cp);
        at_start = sep;
        return r;
    });
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
    std::vector<char32_t> cps = code_points(s);
    std::vector<char32_t> set;
    if (chars) set = code_points(*chars);
    auto stripped = [&](char32_t cp) { return chars ? in_set(cp, set) : is_space(cp); };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && stripped(cps[b])) ++b;
    if (right)
        while (e > b && stripped(cps[e - 1])) --e;
    std::string out;
    for (size_t i = b; i < e; ++i) append_utf8(out, cps[i]);
    return out;
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            size_t at = s.find(*sep, pos);
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, at - pos));
            check_list_items(out.size());
            pos = at + sep->size();
        }
        out.emplace_back(s.substr(pos));
        check_list_items(out.size());
        return out;
    }
    size_t i = 0, n = s.size();
    auto skip_space = [&] {
        while (i < n) {
            size_t j = i;
            if (!is_space(next_cp(s, j))) break;
            i = j;
        }
    };
    skip_space();
    while (i < n) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
            out.emplace_back(s.substr(i));  // the rest, trailing whitespace kept
            check_list_items(out.size());
            return out;
        }
        size_t start = i;
        while (i < n) {
            size_t j = i;
            if (is_space(next_cp(s, j))) break;
            i = j;
        }
        out.emplace_back(s.substr(start, i - start));
        check_list_items(out.size());
        skip_space();
    }
    return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
    if (maxsplit < 0) return split(s, sep, maxsplit);
    std::vector<std::string> out;
    if (sep) {
        size_t end = s.size();
        while (static_cast<int64_t>(out.size()) < maxsplit) {
            if (end < sep->size()) break;
            size_t at = s.rfind(*sep, end - sep->size());
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
            check_list_items(out.size());
            end = at;
        }
        out.emplace_back(s.substr(0, end));
        check_list_items(out.size());
        std::reverse(out.begin(), out.end());
        return out;
    }
    std::vector<char32_t> cps = code_points(s);
    size_t e = cps.size();
    auto piece = [&](size_t b, size_t end) {
        std::string p;
        for (size_t k = b; k < end; ++k) append_utf8(p, cps[k]);
        return p;
    };
    while (e > 0 && is_space(cps[e - 1])) --e;
    while (e > 0) {
        if (static_cast<int64_t>(out.size()) >= maxsplit) {
            out.push_back(piece(0, e));  // the rest, leading whitespace kept
            check_list_items(out.size());
            e = 0;
            break;
        }
        size_t b = e;
        while (b > 0 && !is_space(cps[b - 1])) --b;
        out.push_back(piece(b, e));
        check_list_items(out.size());
        e = b;
        while (e > 0 && is_space(cps[e - 1])) --e;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> out;
    size_t i = 0, start = 0, n = s.size();
    while (i < n) {
        size_t at = i;
        char32_t cp = next_cp(s, i);
        bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                   cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!brk) continue;
        if (cp == '\r' && i < n && s[i] == '\n') ++i;
        out.emplace_back(s.substr(start, (keepends ? i : at) - start));
        check_list_items(out.size());
        start = i;
    }
    if (start < n) out.emplace_back(s.substr(start));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl,
                    int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts `repl` before every code point and at the end.
        int64_t done = 0;
        size_t i = 0;
        while (i < s.size()) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            size_t j = i;
            next_cp(s, j);
            out.append(s.substr(i, j - i));
            i = j;
        }
        if (count < 0 || done < count) out += repl;
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t at = s.find(old, pos);
        if (at == std::string_view::npos) break;
        out.append(s.substr(pos, at - pos));
        out.append(repl);
        pos = at + old.size();
        ++done;
    }
    out.append(s.substr(pos));
    return out;
}

int64_t find(std::string_view s, std::string_view sub, bool reverse) {
    size_t at = reverse ? s.rfind(sub) : s.find(sub);
    if (at == std::string_view::npos) return -1;
    return static_cast<int64_t>(length(s.substr(0, at)));
}

int64_t count(std::string_view s, std::string_view sub) {
    if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
    int64_t n = 0;
    for (size_t pos = s.find(sub); pos != std::string_view::npos;
         pos = s.find(sub, pos + sub.size()))
        ++n;
    return n;
}

std::string repr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    static const char* hex = "0123456789abcdef";
    for (size_t i = 0; i < s.size();) {
        char32_t cp = next_cp(s, i);
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (is_printable(cp)) {
            append_utf8(out, cp);
        } else {
            int digits = cp <= 0xFF ? 2 : cp <= 0xFFFF ? 4 : 8;
            out += digits == 2 ? "\\x" : digits == 4 ? "\\u" : "\\U";
            for (int k = digits - 1; k >= 0; --k) out += hex[(cp >> (4 * k)) & 0xF];
        }
    }
    out += quote;
    return out;
}

}  // namespace myriad::jinja::text
