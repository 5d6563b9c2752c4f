// Python's string formatting: `fmt % args` (printf style) and str.format with format specs.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace myriad::jinja {

namespace {

std::string c_format(const std::string& spec, double d) {
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, spec.c_str(), d);
    if (n < 0 || static_cast<size_t>(n) >= sizeof buf) fail("number format too wide");
    return std::string(buf, static_cast<size_t>(n));
}

std::string c_format(const std::string& spec, long long i) {
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, spec.c_str(), i);
    if (n < 0 || static_cast<size_t>(n) >= sizeof buf) fail("number format too wide");
    return std::string(buf, static_cast<size_t>(n));
}

// Pads `s` to `width` code points: align '<', '>', '^', or '=' (after a leading sign).
std::string align_text(const std::string& s, int64_t width, char align, const std::string& fill) {
    int64_t n = static_cast<int64_t>(text::length(s));
    if (width <= n) return s;
    int64_t total = width - n, left = 0;
    if (align == '>' || align == '=') left = total;
    if (align == '^') left = total / 2;
    std::string pad_l, pad_r;
    for (int64_t i = 0; i < left; ++i) pad_l += fill;
    for (int64_t i = 0; i < total - left; ++i) pad_r += fill;
    if (align == '=' && !s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' '))
        return s.substr(0, 1) + pad_l + s.substr(1);
    return pad_l + s + pad_r;
}

std::string group_digits(const std::string& digits, char sep, size_t every) {
    std::string out;
    size_t n = digits.size();
    for (size_t i = 0; i < n; ++i) {
        if (i > 0 && (n - i) % every == 0) out += sep;
        out += digits[i];
    }
    return out;
}

std::string format_one(Context& ctx, const Value& v, const std::string& spec) {
    if (spec.empty()) return to_str(v);
    // [[fill]align][sign][z][#][0][width][grouping][.precision][type]
    size_t i = 0, n = spec.size();
    std::string fill = " ";
    char align = 0, sign = '-', grouping = 0, type = 0;
    bool alt = false;
    size_t first_len = 0;
    {
        size_t j = 0;
        text::next_cp(spec, j);
        first_len = j;
    }
    auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (first_len < n && is_align(spec[first_len])) {
        fill = spec.substr(0, first_len);
        align = spec[first_len];
        i = first_len + 1;
    } else if (is_align(spec[0])) {
        align = spec[0];
        i = 1;
    }
    if (i < n && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
    if (i < n && spec[i] == 'z') ++i;
    if (i < n && spec[i] == '#') alt = true, ++i;
    if (i < n && spec[i] == '0') {
        if (!align) fill = "0", align = '=';
        ++i;
    }
    int64_t width = 0, precision = -1;
    while (i < n && spec[i] >= '0' && spec[i] <= '9')
        width = std::min<int64_t>(width * 10 + (spec[i++] - '0'), 1 << 20);
    if (i < n && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
    if (i < n && spec[i] == '.') {
        ++i;
        precision = 0;
        while (i < n && spec[i] >= '0' && spec[i] <= '9')
            precision = std::min<int64_t>(precision * 10 + (spec[i++] - '0'), 400);
    }
    if (i < n) type = spec[i++];
    if (i != n) fail("invalid format specifier '{}'", spec);
    ctx.check_size(static_cast<size_t>(width));

    if (v.is_string()) {
        if (type && type != 's') fail("unknown format code '{}' for object of type 'str'", type);
        std::string s = v.str();
        if (precision >= 0) s = s.substr(0, text::byte_offset(s, static_cast<size_t>(precision)));
        return align_text(s, width, align ? align : '<', fill);
    }
    if (!v.is_number()) fail("unsupported format string passed to {}.__format__", type_name(v));
    std::string body;
    bool is_float_type = type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == 'g' ||
                         type == 'G' || type == '%';
    if (!v.is_float() && !is_float_type) {
        int64_t x = v.as_int();
        uint64_t mag = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
        std::string digits, prefix;
        if (type == 0 || type == 'd' || type == 'n') {
            digits = std::to_string(mag);
            if (grouping) digits = group_digits(digits, grouping, 3);
        } else if (type == 'x' || type == 'X' || type == 'o' || type == 'b') {
            int base = type == 'o' ? 8 : type == 'b' ? 2 : 16;
            const char* dig = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
            do {
                digits.insert(digits.begin(), dig[mag % static_cast<uint64_t>(base)]);
                mag /= static_cast<uint64_t>(base);
            } while (mag);
            if (grouping == '_') digits = group_digits(digits, '_', 4);
            if (alt) prefix = type == 'o' ? "0o" : type == 'b' ? "0b" : type == 'X' ? "0X" : "0x";
        } else if (type == 'c') {
            if (x < 0 || x > 0x10FFFF) fail("%c arg not in range(0x110000)");
            text::append_utf8(digits, static_cast<char32_t>(x));
            return align_text(digits, width, align ? align : '<', fill);
        } else {
            fail("unknown format code '{}' for object of type 'int'", type);
        }
        std::string sgn = x < 0 ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
        body = sgn + prefix + digits;
    } else {
        double d = v.as_float();
        std::string spec_c = "%";
        if (sign == '+' || sign == ' ') spec_c += sign;
        if (alt) spec_c += '#';
        int64_t p = precision < 0 ? 6 : precision;
        if (type == 0) {
            if (precision < 0) {
                body = float_repr(d);
                if (sign != '-' && !std::signbit(d)) body = std::string(1, sign) + body;
            } else {
                body = c_format(spec_c + "." + std::to_string(std::max<int64_t>(p, 1)) + "g", d);
                if (std::isfinite(d) && body.find_first_of(".e") == std::string::npos) body += ".0";
            }
        } else if (type == '%') {
            body = c_format(spec_c + "." + std::to_string(p) + "f", d * 100) + "%";
        } else {
            body = c_format(spec_c + "." + std::to_string(p) + type, d);
        }
        if (grouping && std::isfinite(d)) {
            size_t s = body.find_first_of("0123456789");
            size_t e = body.find_first_not_of("0123456789", s);
            if (e == std::string::npos) e = body.size();
            body = body.substr(0, s) + group_digits(body.substr(s, e - s), grouping, 3) +
                   body.substr(e);
        }
    }
    return align_text(body, width, align ? align : '>', fill);
}

}  // namespace

std::string percent_format(Context& ctx, const std::string& fmt, const Value& args) {
    std::vector<Value> positional;
    const DictObject* mapping = args.is_dict() ? &args.dict() : nullptr;
    bool mapping_like = mapping || args.is_list();  // Python's PyMapping_Check: no arity check
    if (args.is_tuple()) {
        positional = args.list().items;
    } else {
        positional.push_back(args);
    }
    size_t next = 0;
    bool used_key = false;
    std::string out;
    size_t i = 0, n = fmt.size();
    auto take = [&]() -> Value {
        if (next >= positional.size()) fail("not enough arguments for format string");
        return positional[next++];
    };
    while (i < n) {
        char c = fmt[i++];
        if (c != '%') {
            out += c;
            continue;
        }
        if (i >= n) fail("incomplete format");
        Value arg;
        bool have_arg = false;
        if (fmt[i] == '(') {
            if (!mapping) fail("format requires a mapping");
            int depth = 1;
            size_t b = ++i;
            while (i < n && depth) {
                depth += fmt[i] == '(' ? 1 : fmt[i] == ')' ? -1 : 0;
                ++i;
            }
            if (depth) fail("incomplete format key");
            const Value* v = mapping->find(std::string_view(fmt).substr(b, i - 1 - b));
            if (!v) fail("KeyError: '{}'", fmt.substr(b, i - 1 - b));
            arg = *v;
            have_arg = used_key = true;
        }
        std::string flags;
        while (i < n && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos)
            flags += fmt[i++];
        int64_t width = -1, precision = -1;
        auto number = [&](int64_t& dst) {
            if (i < n && fmt[i] == '*') {
                ++i;
                Value w = take();
                if (!w.is_int()) fail("* wants int");
                dst = std::clamp<int64_t>(w.as_int(), -(1 << 20), 1 << 20);
                return;
            }
            if (i < n && fmt[i] >= '0' && fmt[i] <= '9') dst = 0;
            while (i < n && fmt[i] >= '0' && fmt[i] <= '9')
                dst = std::min<int64_t>(dst * 10 + (fmt[i++] - '0'), 1 << 20);
        };
        number(width);
        if (i < n && fmt[i] == '.') {
            ++i;
            precision = 0;
            number(precision);
            precision = std::min<int64_t>(precision, 400);
        }
        while (i < n && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
        if (i >= n) fail("incomplete format");
        char type = fmt[i++];
        if (type == '%') {
            out += '%';
            continue;
        }
        if (!have_arg) arg = take();
        bool left = flags.find('-') != std::string::npos;
        if (width < 0 && width != -1) left = true, width = -width;
        ctx.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)) + out.size());
        std::string piece;
        if (type == 's' || type == 'r' || type == 'a') {
            piece = type == 's' ? to_str(arg) : repr(arg);
            if (precision >= 0)
                piece = piece.substr(0, text::byte_offset(piece, static_cast<size_t>(precision)));
        } else if (type == 'c') {
            if (arg.is_string() && text::length(arg.str()) == 1) {
                piece = arg.str();
            } else if (arg.is_int()) {
                if (arg.as_int() < 0 || arg.as_int() > 0x10FFFF)
                    fail("%c arg not in range(0x110000)");
                text::append_utf8(piece, static_cast<char32_t>(arg.as_int()));
            } else {
                fail("%c requires int or char");
            }
        } else {
            if (!arg.is_number())
                fail("%{} format: a real number is required, not {}", type, type_name(arg));
            std::string spec = "%" + flags;
            if (width >= 0) spec += std::to_string(width);
            if (precision >= 0) spec += "." + std::to_string(precision);
            if (type == 'd' || type == 'i' || type == 'u') {
                int64_t v = arg.is_float() ? static_cast<int64_t>(std::trunc(arg.as_float()))
                                           : arg.as_int();
                piece = c_format(spec + "lld", static_cast<long long>(v));
            } else if (type == 'x' || type == 'X' || type == 'o') {
                if (arg.is_float()) fail("%{} format: an integer is required, not float", type);
                piece = c_format(spec + "ll" + type, static_cast<long long>(arg.as_int()));
            } else if (std::string_view("eEfFgG").find(type) != std::string_view::npos) {
                piece = c_format(spec + type, arg.as_float());
            } else {
                fail("unsupported format character '{}'", type);
            }
            out += piece;
            continue;
        }
        int64_t len = static_cast<int64_t>(text::length(piece));
        if (width > len) {
            std::string pad(static_cast<size_t>(width - len), ' ');
            piece = left ? piece + pad : pad + piece;
        }
        out += piece;
        ctx.check_size(out.size());
    }
    if (!used_key && !mapping_like && next < positional.size())
        fail("not all arguments converted during string formatting");
    return out;
}

std::string str_format(Context& ctx, const std::string& fmt, const CallArgs& args) {
    std::string out;
    size_t auto_index = 0, i = 0, n = fmt.size();
    bool manual = false, automatic = false;
    while (i < n) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < n && fmt[i + 1] == '}') {
                out += '}';
                i += 2;
                continue;
            }
            fail("Single '}}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 < n && fmt[i + 1] == '{') {
            out += '{';
            i += 2;
            continue;
        }
        size_t e = fmt.find('}', i);
        if (e == std::string::npos) fail("Single '{{' encountered in format string");
        std::string field = fmt.substr(i + 1, e - i - 1);
        if (field.find('{') != std::string::npos) fail("nested format fields are not supported");
        i = e + 1;
        std::string spec, conv;
        size_t colon = field.find(':');
        if (colon != std::string::npos) spec = field.substr(colon + 1), field.resize(colon);
        size_t bang = field.find('!');
        if (bang != std::string::npos) conv = field.substr(bang + 1), field.resize(bang);
        size_t head_end = field.find_first_of(".[");
        std::string head = field.substr(0, head_end);
        Value v;
        if (head.empty() || head.find_first_not_of("0123456789") == std::string::npos) {
            size_t index;
            if (head.empty()) {
                if (manual)
                    fail(
                        "cannot switch from manual field specification to automatic field "
                        "numbering");
                automatic = true;
                index = auto_index++;
            } else {
                if (automatic)
                    fail(
                        "cannot switch from automatic field numbering to manual field "
                        "specification");
                manual = true;
                index = head.size() > 6 ? SIZE_MAX : std::stoul(head);
            }
            if (index >= args.positional.size())
                fail("Replacement index {} out of range for positional args tuple", index);
            v = args.positional[index];
        } else {
            const Value* found = nullptr;
            for (const auto& [k, val] : args.keyword)
                if (k == head) found = &val;
            if (!found) fail("KeyError: '{}'", head);
            v = *found;
        }
        for (size_t p = head_end; p != std::string::npos && p < field.size();) {
            if (field[p] == '.') {
                size_t q = field.find_first_of(".[", p + 1);
                v = get_attr(
                    ctx, v,
                    field.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
                p = q;
            } else {
                size_t q = field.find(']', p);
                if (q == std::string::npos) fail("Missing ']' in format string");
                std::string key = field.substr(p + 1, q - p - 1);
                bool digits = !key.empty() && key.size() < 10 &&
                              key.find_first_not_of("0123456789") == std::string::npos;
                v = get_item(ctx, v, digits ? Value::integer(std::stoll(key)) : Value::string(key));
                p = q + 1;
            }
            if (v.is_undefined()) raise_undefined(v);
        }
        if (conv == "r" || conv == "a") {
            v = Value::string(repr(v));
        } else if (conv == "s") {
            v = Value::string(to_str(v));
        } else if (!conv.empty()) {
            fail("Unknown conversion specifier {}", conv);
        }
        out += format_one(ctx, v, spec);
        ctx.check_size(out.size());
    }
    return out;
}

}  // namespace myriad::jinja
