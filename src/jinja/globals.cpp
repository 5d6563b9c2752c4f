// The global functions of Hugging Face's chat-template environment: range (capped as jinja2's
// sandbox caps it), namespace, dict, joiner, raise_exception, strftime_now.
#include <ctime>

#include "jinja/builtins.h"

namespace myriad::jinja {

namespace {

using GlobalFn = Value (*)(Context&, CallArgs&);

struct BuiltinFunction : CallableObject {
    std::string_view fn_name;
    GlobalFn fn;
    BuiltinFunction(std::string_view n, GlobalFn f) : fn_name(n), fn(f) {}
    std::string_view name() const override { return fn_name; }
    std::string repr() const override { return fmt::format("<built-in function {}>", fn_name); }
    Value call(Context& ctx, CallArgs& args) override { return fn(ctx, args); }
};

constexpr int64_t kMaxRange = 100000;  // jinja2's sandbox refuses larger ranges

Value g_range(Context& ctx, CallArgs& args) {
    if (!args.keyword.empty()) fail("range() takes no keyword arguments");
    std::vector<int64_t> a;
    for (const Value& v : args.positional) {
        if (!v.is_int() && !v.is_bool())
            fail("'{}' object cannot be interpreted as an integer", type_name(v));
        a.push_back(v.as_int());
    }
    if (a.empty() || a.size() > 3) fail("range expected 1 to 3 arguments, got {}", a.size());
    int64_t start = a.size() == 1 ? 0 : a[0], stop = a.size() == 1 ? a[0] : a[1];
    int64_t step = a.size() == 3 ? a[2] : 1;
    if (step == 0) fail("range() arg 3 must not be zero");
    __int128 count = 0;
    if (step > 0 && stop > start) count = ((__int128)stop - start + step - 1) / step;
    if (step < 0 && stop < start) count = ((__int128)start - stop - step - 1) / -(__int128)step;
    if (count > kMaxRange)
        fail("range too big: the sandbox blocks ranges larger than {}", kMaxRange);
    ctx.count_iterations(static_cast<size_t>(count));
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(count));
    for (__int128 i = 0; i < count; ++i)
        out.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
    Value list = ctx.heap().new_list(std::move(out));
    list.list().view = ListObject::View::Range;
    list.list().range[0] = start, list.list().range[1] = stop, list.list().range[2] = step;
    return list;
}

void merge_into(DictObject& d, const CallArgs& args, std::string_view fn, bool check_names) {
    if (args.positional.size() > 1) fail("{}() expected at most 1 positional argument", fn);
    auto put = [&](const Value& k, const Value& v) {
        if (check_names && k.is_string() && !k.str().empty() && k.str()[0] == '_')
            fail(
                "chat templates cannot store underscore-prefixed attributes on a namespace, "
                "but got '{}'",
                k.str());
        d.set(k, v);
    };
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (src.is_dict()) {
            for (const auto& [k, v] : src.dict().entries) put(k, v);
        } else {
            for (const Value& pair : iterate(src)) {
                std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2)
                    fail("{}(): sequence element has length {}; 2 is required", fn, kv.size());
                put(kv[0], kv[1]);
            }
        }
    }
    for (const auto& [k, v] : args.keyword) put(Value::string(k), v);
}

Value g_namespace(Context& ctx, CallArgs& args) {
    NamespaceObject* ns = ctx.heap().make<NamespaceObject>();
    merge_into(ns->attrs, args, "namespace", true);
    return Value::ns(ns);
}

Value g_dict(Context& ctx, CallArgs& args) {
    DictObject* d = ctx.heap().dict();
    merge_into(*d, args, "dict", false);
    return Value::dict(d);
}

Value g_raise_exception(Context&, CallArgs& args) {
    Args a(args, "raise_exception", {"message"});
    fail("{}", to_str(a[0]));
}

Value g_strftime_now(Context& ctx, CallArgs& args) {
    Args a(args, "strftime_now", {"format"});
    std::string f = a.opt_string(0).value_or("");
    std::time_t t = ctx.now();
    std::tm tm{};
    localtime_r(&t, &tm);
    std::string out(256 + f.size() * 16, '\0');
    size_t n = f.empty() ? 0 : std::strftime(out.data(), out.size(), f.c_str(), &tm);
    out.resize(n);
    return Value::string(std::move(out));
}

// joiner(sep): a callable that returns "" the first time and `sep` after.
struct Joiner : CallableObject {
    std::string sep;
    bool used = false;
    std::string_view name() const override { return "joiner"; }
    std::string repr() const override { return "<jinja2.utils.Joiner object>"; }
    Value call(Context&, CallArgs& args) override {
        Args a(args, "joiner.__call__", {});
        if (!used) {
            used = true;
            return Value::string("");
        }
        return Value::string(sep);
    }
};

Value g_joiner(Context& ctx, CallArgs& args) {
    Args a(args, "joiner", {"sep"});
    Joiner* j = ctx.heap().make<Joiner>();
    j->sep = a.given(0) ? to_str(a[0]) : ", ";
    return Value::callable(j);
}

BuiltinFunction g_fns[] = {
    {"joiner", g_joiner},
    {"range", g_range},
    {"namespace", g_namespace},
    {"dict", g_dict},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
};

}  // namespace

Value find_global(std::string_view name) {
    for (BuiltinFunction& f : g_fns)
        if (f.fn_name == name) return Value::callable(&f);
    return Value::undefined(fmt::format("'{}' is undefined", name));
}

}  // namespace myriad::jinja
