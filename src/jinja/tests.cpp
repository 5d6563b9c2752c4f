// jinja2's tests (`x is defined`, `x is none`, `x is divisibleby 3`, ...).
#include <algorithm>
#include <cmath>
#include <utility>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace myriad::jinja {

namespace {

const Value& arg0(CallArgs& args, std::string_view test) {
    if (args.positional.empty()) {
        if (!args.keyword.empty()) return args.keyword[0].second;
        fail("test '{}' needs an argument", test);
    }
    return args.positional[0];
}

bool odd_even(Context& ctx, const Value& v, bool odd) {
    // jinja2: value % 2 == 1 (odd) or == 0 (even), so 0.5 is neither.
    return equals(binary_op(ctx, Op::Mod, v, Value::integer(2)), Value::integer(odd ? 1 : 0));
}

bool t_defined(Context&, const Value& v, CallArgs&) {
    return !v.is_undefined();
}
bool t_undefined(Context&, const Value& v, CallArgs&) {
    return v.is_undefined();
}
bool t_none(Context&, const Value& v, CallArgs&) {
    return v.is_none();
}
bool t_boolean(Context&, const Value& v, CallArgs&) {
    return v.is_bool();
}
bool t_false(Context&, const Value& v, CallArgs&) {
    return v.is_bool() && !v.as_bool();
}
bool t_true(Context&, const Value& v, CallArgs&) {
    return v.is_bool() && v.as_bool();
}
bool t_integer(Context&, const Value& v, CallArgs&) {
    return v.is_int();
}
bool t_float(Context&, const Value& v, CallArgs&) {
    return v.is_float();
}
bool t_number(Context&, const Value& v, CallArgs&) {
    return v.is_number();
}
bool t_string(Context&, const Value& v, CallArgs&) {
    return v.is_string();
}
bool t_mapping(Context&, const Value& v, CallArgs&) {
    return v.is_dict();
}
bool t_iterable(Context&, const Value& v, CallArgs&) {
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict() || v.is_loop();
}
bool t_sequence(Context&, const Value& v, CallArgs&) {
    if (v.is_list() && v.list().view != ListObject::View::None)
        return v.list().view == ListObject::View::Range;  // views have no [], generators no len
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
}
bool t_callable(Context&, const Value& v, CallArgs&) {
    return v.is_callable() || v.is_loop() || v.is_undefined();  // Undefined has __call__
}
bool t_escaped(Context&, const Value&, CallArgs&) {
    return false;
}
bool t_odd(Context& ctx, const Value& v, CallArgs&) {
    return odd_even(ctx, v, true);
}
bool t_even(Context& ctx, const Value& v, CallArgs&) {
    return odd_even(ctx, v, false);
}
bool t_divisibleby(Context& ctx, const Value& v, CallArgs& a) {
    return equals(binary_op(ctx, Op::Mod, v, arg0(a, "divisibleby")), Value::integer(0));
}
bool t_lower(Context&, const Value& v, CallArgs&) {
    std::string s = to_str(v);
    return text::lower(s) == s && text::upper(s) != s;
}
bool t_upper(Context&, const Value& v, CallArgs&) {
    std::string s = to_str(v);
    return text::upper(s) == s && text::lower(s) != s;
}
bool t_eq(Context&, const Value& v, CallArgs& a) {
    return equals(v, arg0(a, "eq"));
}
bool t_ne(Context&, const Value& v, CallArgs& a) {
    return !equals(v, arg0(a, "ne"));
}
bool t_lt(Context&, const Value& v, CallArgs& a) {
    return less(v, arg0(a, "lt"));
}
bool t_gt(Context&, const Value& v, CallArgs& a) {
    return less(arg0(a, "gt"), v);
}
bool t_le(Context&, const Value& v, CallArgs& a) {
    return !less(arg0(a, "le"), v);
}
bool t_ge(Context&, const Value& v, CallArgs& a) {
    return !less(v, arg0(a, "ge"));
}
bool t_in(Context&, const Value& v, CallArgs& a) {
    return contains(arg0(a, "in"), v);
}
bool t_sameas(Context&, const Value& v, CallArgs& a) {
    const Value& o = arg0(a, "sameas");
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::Bool:
            return v.as_bool() == o.as_bool();
        case Value::Kind::Int:
            return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
        case Value::Kind::Float:
            return false;
        case Value::Kind::String:
            return v.shared_str() == o.shared_str();
        default:
            return v.object() == o.object();
    }
}
bool t_filter(Context&, const Value& v, CallArgs&) {
    return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Context&, const Value& v, CallArgs&) {
    return v.is_string() && find_test(v.str()) != nullptr;
}

const std::pair<std::string_view, TestFn> kTests[] = {
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {">=", t_ge},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"<=", t_le},
    {"lower", t_lower},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"!=", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

TestFn find_test(std::string_view name) {
    for (const auto& [n, fn] : kTests)
        if (n == name) return fn;
    return nullptr;
}

}  // namespace myriad::jinja
