// Operators, argument binding, iteration, and attribute/item access, with Python's semantics.
#include <algorithm>
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/item_limit.h"
#include "jinja/text.h"

namespace myriad::jinja {

Args::Args(const CallArgs& args, std::string_view function,
           std::initializer_list<std::string_view> names)
    : function_(function), names_(names), values_(names.size()) {
    if (args.positional.size() > names_.size())
        fail("{}() takes at most {} argument(s) ({} given)", function_, names_.size(),
             args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
    for (const auto& [key, v] : args.keyword) {
        auto it = std::find(names_.begin(), names_.end(), key);
        if (it == names_.end())
            fail("{}() got an unexpected keyword argument '{}'", function_, key);
        size_t i = static_cast<size_t>(it - names_.begin());
        if (i < args.positional.size())
            fail("{}() got multiple values for argument '{}'", function_, key);
        values_[i] = v;
    }
}

std::optional<std::string> Args::opt_string(size_t i) const {
    const Value& v = values_[i];
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_string())
        fail("{}(): argument '{}' must be a string, not {}", function_, names_[i], type_name(v));
    return v.str();
}

int64_t Args::integer(size_t i, int64_t fallback) const {
    const Value& v = values_[i];
    if (v.is_undefined() || v.is_none()) return fallback;
    if (!v.is_int() && !v.is_bool())
        fail("{}(): argument '{}' must be an integer, not {}", function_, names_[i], type_name(v));
    return v.as_int();
}

bool Args::boolean(size_t i, bool fallback) const {
    return values_[i].is_undefined() ? fallback : truthy(values_[i]);
}

// ---- iteration, length, membership -----------------------------------------------------------

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return {};
        case Value::Kind::List:
            if (is_generator(v)) {  // single pass, and a deferred error surfaces here
                ListObject& g = v.list();
                if (!g.pending_error.empty()) fail("{}", g.pending_error);
                return std::move(g.items);
            }
            return v.list().items;
        case Value::Kind::Tuple:
            return v.list().items;
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            keys.reserve(v.dict().size());
            for (const auto& e : v.dict().entries) keys.push_back(e.first);
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            const std::string& s = v.str();
            check_list_items(text::length(s));
            for (size_t i = 0; i < s.size();) {
                size_t b = i;
                text::next_cp(s, i);
                chars.push_back(Value::string(s.substr(b, i - b)));
            }
            return chars;
        }
        default:
            fail("'{}' object is not iterable", type_name(v));
    }
}

size_t length(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return 0;
        case Value::Kind::String:
            return text::length(v.str());
        case Value::Kind::List:
            if (is_generator(v)) fail("object of type '{}' has no len()", type_name(v));
            return v.list().items.size();
        case Value::Kind::Tuple:
            return v.list().items.size();
        case Value::Kind::Dict:
            return v.dict().size();
        default:
            fail("object of type '{}' has no len()", type_name(v));
    }
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Value::Kind::Undefined:
            return false;
        case Value::Kind::String:
            if (!item.is_string())
                fail("'in <string>' requires string as left operand, not {}", type_name(item));
            return container.str().find(item.str()) != std::string::npos;
        case Value::Kind::List:
        case Value::Kind::Tuple:
            for (const Value& x :
                 is_generator(container) ? iterate(container) : container.list().items)
                if (equals(x, item)) return true;
            return false;
        case Value::Kind::Dict:
            return container.dict().find(item) != nullptr;
        default:
            fail("argument of type '{}' is not iterable", type_name(container));
    }
}

// ---- arithmetic ----------------------------------------------------------------------------

namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
    fail("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b));
}

[[noreturn]] void overflow() {
    fail("integer overflow: the result does not fit in 64 bits");
}

bool is_integral(const Value& v) {
    return v.is_int() || v.is_bool();
}

Value repeat(Context& ctx, const Value& seq, int64_t times) {
    if (times <= 0) {
        if (seq.is_string()) return Value::string("");
        return seq.is_tuple() ? ctx.heap().new_tuple({}) : ctx.heap().new_list();
    }
    if (seq.is_string()) {
        if (seq.str().size() > 0 && static_cast<uint64_t>(times) > (1ull << 40) / seq.str().size())
            ctx.check_size(SIZE_MAX);
        ctx.check_size(seq.str().size() * static_cast<size_t>(times));
        std::string out;
        out.reserve(seq.str().size() * static_cast<size_t>(times));
        for (int64_t i = 0; i < times; ++i) out += seq.str();
        return Value::string(std::move(out));
    }
    const auto& items = seq.list().items;
    if (!items.empty() && static_cast<uint64_t>(times) > (1ull << 40) / items.size())
        check_list_items(SIZE_MAX);
    check_list_items(items.size() * static_cast<size_t>(times));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return seq.is_tuple() ? ctx.heap().new_tuple(std::move(out))
                          : ctx.heap().new_list(std::move(out));
}

int64_t floor_div(int64_t a, int64_t b) {
    if (a == INT64_MIN && b == -1) overflow();
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

// Python's float divmod.
std::pair<double, double> float_divmod(double a, double b) {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, b);
    }
    double floordiv;
    if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, a / b);
    }
    return {floordiv, mod};
}

Value int_pow(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 0) fail("0.0 cannot be raised to a negative power");
        return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exp)));
    }
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1)
            if (__builtin_mul_overflow(result, base, &result)) overflow();
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
    }
    return Value::integer(result);
}

}  // namespace

Value binary_op(Context& ctx, Op op, const Value& a, const Value& b) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    bool nums = a.is_number() && b.is_number();
    bool ints = is_integral(a) && is_integral(b);
    int64_t r = 0;
    switch (op) {
        case Op::Add:
            if (ints) {
                if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::number(a.as_float() + b.as_float());
            if (a.is_string() && b.is_string()) {
                ctx.check_size(a.str().size() + b.str().size());
                return Value::string(a.str() + b.str());
            }
            if (a.kind() == b.kind() && a.is_sequence() &&
                a.list().view == ListObject::View::None &&
                b.list().view == ListObject::View::None) {
                check_list_items(a.list().items.size() + b.list().items.size());
                std::vector<Value> items = a.list().items;
                items.insert(items.end(), b.list().items.begin(), b.list().items.end());
                return a.is_tuple() ? ctx.heap().new_tuple(std::move(items))
                                    : ctx.heap().new_list(std::move(items));
            }
            if (a.is_string() || a.is_sequence())
                fail("can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b),
                     type_name(a));
            unsupported("+", a, b);
        case Op::Sub:
            if (ints) {
                if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::number(a.as_float() - b.as_float());
            unsupported("-", a, b);
        case Op::Mul:
            if (ints) {
                if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::number(a.as_float() * b.as_float());
            if ((a.is_string() || a.is_sequence()) && is_integral(b))
                return repeat(ctx, a, b.as_int());
            if (is_integral(a) && (b.is_string() || b.is_sequence()))
                return repeat(ctx, b, a.as_int());
            unsupported("*", a, b);
        case Op::Div:
            if (!nums) unsupported("/", a, b);
            if (b.as_float() == 0) fail("division by zero");
            return Value::number(a.as_float() / b.as_float());
        case Op::FloorDiv:
            if (!nums) unsupported("//", a, b);
            if (ints) {
                if (b.as_int() == 0) fail("integer division or modulo by zero");
                return Value::integer(floor_div(a.as_int(), b.as_int()));
            }
            if (b.as_float() == 0) fail("float floor division by zero");
            return Value::number(float_divmod(a.as_float(), b.as_float()).first);
        case Op::Mod:
            if (a.is_string()) return Value::string(percent_format(ctx, a.str(), b));
            if (!nums) unsupported("%", a, b);
            if (ints) {
                if (b.as_int() == 0) fail("integer division or modulo by zero");
                return Value::integer(floor_mod(a.as_int(), b.as_int()));
            }
            if (b.as_float() == 0) fail("float modulo");
            return Value::number(float_divmod(a.as_float(), b.as_float()).second);
        case Op::Pow: {
            if (!nums) unsupported("** or pow()", a, b);
            if (ints) return int_pow(a.as_int(), b.as_int());
            double x = a.as_float(), y = b.as_float();
            if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
            if (x < 0 && y != std::floor(y))
                fail("a negative number to a fractional power is complex");
            return Value::number(std::pow(x, y));
        }
        default:
            fail("unsupported operator");
    }
}

Value unary_op(Op op, const Value& a) {
    if (a.is_undefined()) raise_undefined(a);
    if (!a.is_number())
        fail("bad operand type for unary {}: '{}'", op == Op::Neg ? "-" : "+", type_name(a));
    if (a.is_float()) return Value::number(op == Op::Neg ? -a.as_float() : a.as_float());
    if (op == Op::Pos) return Value::integer(a.as_int());
    if (a.as_int() == INT64_MIN) overflow();
    return Value::integer(-a.as_int());
}

// ---- attribute and item access -------------------------------------------------------------

namespace {

struct BoundMethod : CallableObject {
    Value self;
    std::string method;
    std::string_view name() const override { return method; }
    std::string repr() const override {
        return fmt::format("<built-in method {} of {} object>", method, type_name(self));
    }
    Value call(Context& ctx, CallArgs& args) override {
        if (auto r = call_method(ctx, self, method, args)) return *r;
        fail("'{}' object has no method '{}'", type_name(self), method);
    }
};

bool is_method(const Value& obj, std::string_view name) {
    if (obj.is_list() && obj.list().view != ListObject::View::None)
        return obj.list().view == ListObject::View::Range && (name == "index" || name == "count");
    static const std::vector<std::string_view> str_methods = {
        "startswith", "endswith",   "split",        "rsplit",       "strip",    "lstrip",
        "rstrip",     "replace",    "upper",        "lower",        "title",    "capitalize",
        "find",       "rfind",      "index",        "rindex",       "count",    "join",
        "format",     "splitlines", "isdigit",      "isalpha",      "isalnum",  "isspace",
        "islower",    "isupper",    "center",       "ljust",        "rjust",    "zfill",
        "partition",  "rpartition", "removeprefix", "removesuffix", "casefold", "swapcase"};
    static const std::vector<std::string_view> list_methods = {
        "append", "pop",     "extend", "insert", "index", "count",
        "remove", "reverse", "sort",   "copy",   "clear"};
    static const std::vector<std::string_view> tuple_methods = {"index", "count"};
    static const std::vector<std::string_view> dict_methods = {
        "get", "items", "keys", "values", "update", "pop", "setdefault", "copy", "clear"};
    const std::vector<std::string_view>* names = nullptr;
    switch (obj.kind()) {
        case Value::Kind::String:
            names = &str_methods;
            break;
        case Value::Kind::List:
            names = &list_methods;
            break;
        case Value::Kind::Tuple:
            names = &tuple_methods;
            break;
        case Value::Kind::Dict:
            names = &dict_methods;
            break;
        default:
            return false;
    }
    return std::find(names->begin(), names->end(), name) != names->end();
}

Value bind(Context& ctx, const Value& obj, const std::string& name) {
    BoundMethod* m = ctx.heap().make<BoundMethod>();
    m->self = obj;
    m->method = name;
    return Value::callable(m);
}

Value no_attribute(const Value& obj, std::string_view name) {
    return Value::undefined(
        obj.is_none() ? fmt::format("'None' has no attribute '{}'", name)
                      : fmt::format("'{}' has no attribute '{}'", object_description(obj), name));
}

Value loop_attr(Context& ctx, const Value& obj, const std::string& name) {
    LoopObject& l = obj.loop();
    const auto& items = l.items->items;
    int64_t i = l.index0;
    if (name == "index0") return Value::integer(i);
    if (name == "index") return Value::integer(i + 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(static_cast<size_t>(i) + 1 >= items.size());
    if (name == "length") return Value::integer(l.length());
    if (name == "revindex") return Value::integer(l.length() - i);
    if (name == "revindex0") return Value::integer(l.length() - i - 1);
    if (name == "depth") return Value::integer(l.depth0 + 1);
    if (name == "depth0") return Value::integer(l.depth0);
    if (name == "previtem")
        return i > 0 && static_cast<size_t>(i) <= items.size()
                   ? items[static_cast<size_t>(i) - 1]
                   : Value::undefined("there is no previous item");
    if (name == "nextitem")
        return static_cast<size_t>(i) + 1 < items.size()
                   ? items[static_cast<size_t>(i) + 1]
                   : Value::undefined("there is no next item");
    if (name == "cycle" || name == "changed") return bind(ctx, obj, name);
    return no_attribute(obj, name);
}

// dict views and generators are not subscriptable; lists, tuples and ranges are.
bool is_dict_view(const Value& v) {
    auto view = v.list().view;
    return view != ListObject::View::None && view != ListObject::View::Range;
}

Value index_sequence(const Value& obj, int64_t i, size_t n) {
    int64_t k = i < 0 ? i + static_cast<int64_t>(n) : i;
    if (k < 0 || k >= static_cast<int64_t>(n))
        return Value::undefined(fmt::format("{} has no element {}", object_description(obj), i));
    if (obj.is_string()) {
        const std::string& s = obj.str();
        size_t b = text::byte_offset(s, static_cast<size_t>(k));
        size_t e = b;
        text::next_cp(s, e);
        return Value::string(s.substr(b, e - b));
    }
    return obj.list().items[static_cast<size_t>(k)];
}

}  // namespace

Value get_attr(Context& ctx, const Value& obj, const std::string& name) {
    switch (obj.kind()) {
        case Value::Kind::Undefined:
            raise_undefined(obj);
        case Value::Kind::Namespace: {
            const Value* v = obj.ns().attrs.find(std::string_view(name));
            return v ? *v : no_attribute(obj, name);
        }
        case Value::Kind::Loop:
            return loop_attr(ctx, obj, name);
        case Value::Kind::Dict: {
            if (is_method(obj, name)) return bind(ctx, obj, name);
            const Value* v = obj.dict().find(std::string_view(name));
            return v ? *v : no_attribute(obj, name);
        }
        default:
            if (is_method(obj, name)) return bind(ctx, obj, name);
            return no_attribute(obj, name);
    }
}

Value get_item(Context& ctx, const Value& obj, const Value& key) {
    if (obj.is_undefined()) raise_undefined(obj);
    switch (obj.kind()) {
        case Value::Kind::Dict:
            if (key.is_string() || key.is_number() || key.is_none() || key.is_tuple()) {
                const Value* v = nullptr;
                try {
                    v = obj.dict().find(key);
                } catch (const RenderFailure&) {  // an unhashable key is not found
                }
                if (v) return *v;
            }
            break;
        case Value::Kind::List:
        case Value::Kind::Tuple:
            if ((key.is_int() || key.is_bool()) && !is_dict_view(obj))
                return index_sequence(obj, key.as_int(), obj.list().items.size());
            break;
        case Value::Kind::String:
            if (key.is_int() || key.is_bool())
                return index_sequence(obj, key.as_int(), text::length(obj.str()));
            break;
        default:
            break;
    }
    if (key.is_string()) {
        if (obj.is_namespace() || obj.is_loop() || is_method(obj, key.str()))
            return get_attr(ctx, obj, key.str());
        return no_attribute(obj, key.str());
    }
    return Value::undefined(
        fmt::format("{} has no element {}", object_description(obj), repr(key)));
}

Value get_slice(Context& ctx, const Value& obj, const Value& start, const Value& stop,
                const Value& step) {
    // As in jinja2, slices bypass the item fallbacks: Python's own errors surface.
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_dict()) fail("unhashable type: 'slice'");
    if ((!obj.is_string() && !obj.is_sequence()) || (obj.is_list() && is_dict_view(obj)))
        fail("'{}' object is not subscriptable", type_name(obj));
    auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        if (!v.is_int() && !v.is_bool())
            fail("slice indices must be integers or None, not {} ({})", type_name(v), what);
        return v.as_int();
    };
    std::optional<int64_t> b = bound(start, "start"), e = bound(stop, "stop"),
                           s = bound(step, "step");
    int64_t st = s.value_or(1);
    if (st == 0) fail("slice step cannot be zero");
    if (st == INT64_MIN) st = -INT64_MAX;
    const std::string* str = obj.is_string() ? &obj.str() : nullptr;
    bool ascii = str && text::is_ascii(*str);
    int64_t n = str ? static_cast<int64_t>(ascii ? str->size() : text::length(*str))
                    : static_cast<int64_t>(obj.list().items.size());
    auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) {
            x = x < -n ? (st < 0 ? -1 : 0) : x + n;
        } else if (x >= n) {
            x = st < 0 ? n - 1 : n;
        }
        return x;
    };
    int64_t lo = adjust(b, st < 0 ? n - 1 : 0);
    int64_t hi = adjust(e, st < 0 ? -1 : n);
    std::vector<int64_t> picks;  // the chosen indices (a step of 1 on a string needs none)
    if (!(str && st == 1)) {
        if (st > 0) {
            for (int64_t i = lo; i < hi; i += st) picks.push_back(i);
        } else {
            for (int64_t i = lo; i > hi; i += st) picks.push_back(i);
        }
    }
    if (str) {
        if (st == 1) {
            auto at = [&](int64_t k) {
                size_t c = static_cast<size_t>(std::max(k, int64_t{0}));
                return ascii ? c : text::byte_offset(*str, c);
            };
            size_t bo = at(lo), eo = at(std::max(hi, lo));
            return Value::string(str->substr(bo, eo - bo));
        }
        std::vector<size_t> offs = ascii ? std::vector<size_t>() : text::offsets(*str);
        std::string out;
        for (int64_t i : picks) {
            size_t k = static_cast<size_t>(i);
            if (ascii) {
                out += (*str)[k];
            } else {
                out.append(*str, offs[k], offs[k + 1] - offs[k]);
            }
        }
        return Value::string(std::move(out));
    }
    if (obj.is_list() && obj.list().view == ListObject::View::Range) {
        const int64_t* r = obj.list().range;
        Value sliced = ctx.heap().new_list();
        for (int64_t i : picks)
            sliced.list().items.push_back(obj.list().items[static_cast<size_t>(i)]);
        sliced.list().view = ListObject::View::Range;
        sliced.list().range[0] = r[0] + lo * r[2];
        sliced.list().range[1] = r[0] + hi * r[2];
        sliced.list().range[2] = r[2] * st;
        return sliced;
    }
    std::vector<Value> out;
    for (int64_t i : picks) out.push_back(obj.list().items[static_cast<size_t>(i)]);
    return obj.is_tuple() ? ctx.heap().new_tuple(std::move(out))
                          : ctx.heap().new_list(std::move(out));
}

}  // namespace myriad::jinja
