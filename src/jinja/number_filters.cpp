// Number filters of jinja2: int, float, abs, round, with Python's conversions.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace myriad::jinja {

namespace {

Value f_abs(Context&, const Value& v, CallArgs&) {
    if (v.is_float()) return Value::number(std::fabs(v.as_float()));
    if (!v.is_number()) fail("bad operand type for abs(): '{}'", type_name(v));
    if (v.as_int() == INT64_MIN) fail("integer overflow");
    return Value::integer(std::llabs(v.as_int()));
}

// Python's float(str): surrounding whitespace and underscores between digits allowed.
std::optional<double> parse_float(const std::string& s) {
    std::string t = text::strip(s, std::nullopt, true, true);
    std::string clean;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '_' && i > 0 && i + 1 < t.size() &&
            isdigit(static_cast<unsigned char>(t[i - 1])) &&
            isdigit(static_cast<unsigned char>(t[i + 1])))
            continue;
        clean += t[i];
    }
    if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
    char* end = nullptr;
    double d = std::strtod(clean.c_str(), &end);
    if (end != clean.c_str() + clean.size()) return std::nullopt;
    return d;
}

Value f_float(Context&, const Value& v, CallArgs& args) {
    Args a(args, "float", {"default"});
    Value fallback = a.given(0) ? a[0] : Value::number(0.0);
    if (v.is_number()) return Value::number(v.as_float());
    if (v.is_string())
        if (auto d = parse_float(v.str())) return Value::number(*d);
    return fallback;
}

// Python's int(str, base): sign, whitespace, underscores; base 0 reads a prefix.
std::optional<int64_t> parse_int(const std::string& s, int64_t base) {
    std::string t = text::strip(s, std::nullopt, true, true);
    size_t i = 0;
    bool neg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    if (i + 1 < t.size() && t[i] == '0') {
        char p = static_cast<char>(t[i + 1] | 0x20);
        int64_t pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) base = pb, i += 2;
    }
    if (base == 0) base = 10;
    if (base < 2 || base > 36 || i >= t.size()) return std::nullopt;
    uint64_t v = 0;
    bool any = false;
    for (; i < t.size(); ++i) {
        char c = t[i];
        if (c == '_' && any && i + 1 < t.size() && t[i + 1] != '_') continue;
        int d = c >= '0' && c <= '9'                     ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10
                                                         : 99;
        if (d >= base) return std::nullopt;
        if (v > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) /
                    static_cast<uint64_t>(base))
            fail("int(): integer past 64 bits");
        v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
        any = true;
    }
    if (!any) return std::nullopt;
    return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

Value f_int(Context&, const Value& v, CallArgs& args) {
    Args a(args, "int", {"default", "base"});
    Value fallback = a.given(0) ? a[0] : Value::integer(0);
    auto from_float = [&](double d) -> Value {
        if (std::isnan(d)) return fallback;
        if (std::isinf(d) || std::fabs(d) >= 9.2e18)
            fail("cannot convert float {} to a 64-bit integer", float_repr(d));
        return Value::integer(static_cast<int64_t>(std::trunc(d)));
    };
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float()) return from_float(v.as_float());
    if (v.is_string()) {
        if (auto i = parse_int(v.str(), a.integer(1, 10))) return Value::integer(*i);
        if (auto d = parse_float(v.str())) return from_float(*d);
    }
    return fallback;
}

Value f_round(Context&, const Value& v, CallArgs& args) {
    Args a(args, "round", {"precision", "method"});
    int64_t p = std::clamp<int64_t>(a.integer(0, 0), -308, 308);
    std::string method = a.opt_string(1).value_or("common");
    if (method != "common" && method != "floor" && method != "ceil")
        fail("method must be common, ceil or floor");
    if (!v.is_number()) fail("type {} doesn't define __round__ method", type_name(v));
    if (method == "common") {
        if (!v.is_float()) return Value::integer(v.as_int());  // round(int, 0) stays an int
        double d = v.as_float();
        if (!std::isfinite(d)) return Value::number(d);
        if (p < 0) {
            double scale = std::pow(10.0, static_cast<double>(-p));
            return Value::number(std::nearbyint(d / scale) * scale);
        }
        char buf[400];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(p, 300)), d);
        return Value::number(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(p));
    double x = v.as_float() * scale;
    return Value::number((method == "floor" ? std::floor(x) : std::ceil(x)) / scale);
}

const std::pair<std::string_view, FilterFn> kNumberFilters[] = {
    {"abs", f_abs},
    {"float", f_float},
    {"int", f_int},
    {"round", f_round},
};

}  // namespace

FilterFn find_number_filter(std::string_view name) {
    for (const auto& [n, fn] : kNumberFilters)
        if (n == name) return fn;
    return nullptr;
}

}  // namespace myriad::jinja
