// Methods of str, list, tuple and dict as Python defines them. In-place list and dict methods
// are allowed (jinja2's SandboxedEnvironment; Kimi-K2-Thinking's template appends and pops).
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/item_limit.h"
#include "jinja/text.h"

namespace myriad::jinja {

namespace {

std::string join_strings(Context& ctx, const std::string& sep, const Value& items) {
    std::string out;
    size_t i = 0;
    for (const Value& v : iterate(items)) {
        if (!v.is_string())
            fail("sequence item {}: expected str instance, {} found", i, type_name(v));
        if (i++) out += sep;
        out += v.str();
        ctx.check_size(out.size());
    }
    return out;
}

// Python's [start:end] bounds of str methods, as byte offsets.
std::pair<size_t, size_t> sub_range(const std::string& s, const Args& a, size_t first) {
    int64_t n = static_cast<int64_t>(text::length(s));
    auto fix = [&](size_t i, int64_t dflt) {
        int64_t v = a.integer(i, dflt);
        if (v < 0) v = std::max<int64_t>(0, v + n);
        return std::min(v, n);
    };
    int64_t b = fix(first, 0), e = fix(first + 1, n);
    if (e < b) e = b;
    return {text::byte_offset(s, static_cast<size_t>(b)),
            text::byte_offset(s, static_cast<size_t>(e))};
}

bool affix_match(const std::string& s, const Value& affix, const Args& a, bool prefix,
                 std::string_view fn) {
    auto [b, e] = sub_range(s, a, 1);
    std::string_view view = std::string_view(s).substr(b, e - b);
    auto one = [&](const Value& p) {
        if (!p.is_string())
            fail("{} first arg must be str or a tuple of str, not {}", fn, type_name(p));
        const std::string& x = p.str();
        if (x.size() > view.size()) return false;
        return prefix ? view.compare(0, x.size(), x) == 0
                      : view.compare(view.size() - x.size(), x.size(), x) == 0;
    };
    if (affix.is_tuple()) {
        for (const Value& p : affix.list().items)
            if (one(p)) return true;
        return false;
    }
    return one(affix);
}

Value str_list(Context& ctx, const std::vector<std::string>& parts) {
    std::vector<Value> out;
    out.reserve(parts.size());
    for (const auto& p : parts) out.push_back(Value::string(p));
    return ctx.heap().new_list(std::move(out));
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, int align) {
    int64_t n = static_cast<int64_t>(text::length(s));
    if (width <= n) return s;
    int64_t total = width - n;
    int64_t left = align < 0 ? 0 : align > 0 ? total : total / 2 + (total & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < total - left; ++i) out += fill;
    return out;
}

bool all_cps(const std::string& s, bool (*pred)(char32_t)) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size();)
        if (!pred(text::next_cp(s, i))) return false;
    return true;
}

std::optional<Value> string_method(Context& ctx, const Value& self, const std::string& name,
                                   CallArgs& args) {
    const std::string& s = self.str();
    auto str = [](std::string v) { return Value::string(std::move(v)); };
    if (name == "startswith" || name == "endswith") {
        Args a(args, name, {"prefix", "start", "end"});
        return Value::boolean(affix_match(s, a[0], a, name == "startswith", name));
    }
    if (name == "split" || name == "rsplit") {
        Args a(args, name, {"sep", "maxsplit"});
        auto sep = a.opt_string(0);
        if (sep && sep->empty()) fail("empty separator");
        int64_t maxsplit = a.integer(1, -1);
        return str_list(
            ctx, name == "split" ? text::split(s, sep, maxsplit) : text::rsplit(s, sep, maxsplit));
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        Args a(args, name, {"chars"});
        return str(text::strip(s, a.opt_string(0), name != "rstrip", name != "lstrip"));
    }
    if (name == "replace") {
        Args a(args, name, {"old", "new", "count"});
        auto old = a.opt_string(0), repl = a.opt_string(1);
        if (!old || !repl) fail("replace() arguments must be strings");
        ctx.check_size(s.size() + static_cast<size_t>(text::count(s, *old)) * repl->size());
        std::string out = text::replace(s, *old, *repl, a.integer(2, -1));
        ctx.check_size(out.size());
        return str(std::move(out));
    }
    if (name == "upper") return str(text::upper(s));
    if (name == "lower" || name == "casefold") return str(text::lower(s));
    if (name == "title") return str(text::py_title(s));
    if (name == "capitalize") return str(text::capitalize(s));
    if (name == "swapcase") {
        std::string out;
        for (size_t i = 0; i < s.size();) {
            char32_t c = text::next_cp(s, i);
            char32_t u = text::to_upper(c);
            text::append_utf8(out, u != c ? u : text::to_lower(c));
        }
        return str(std::move(out));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        Args a(args, name, {"sub", "start", "end"});
        auto sub = a.opt_string(0);
        if (!sub) fail("{}() argument must be str", name);
        auto [b, e] = sub_range(s, a, 1);
        bool rev = name[0] == 'r';
        int64_t at = text::find(std::string_view(s).substr(b, e - b), *sub, rev);
        if (at >= 0) at += static_cast<int64_t>(text::length(std::string_view(s).substr(0, b)));
        if (at < 0 && name.find("index") != std::string::npos) fail("substring not found");
        return Value::integer(at);
    }
    if (name == "count") {
        Args a(args, name, {"sub", "start", "end"});
        auto sub = a.opt_string(0);
        if (!sub) fail("count() argument must be str");
        auto [b, e] = sub_range(s, a, 1);
        return Value::integer(text::count(std::string_view(s).substr(b, e - b), *sub));
    }
    if (name == "join") {
        Args a(args, name, {"iterable"});
        return str(join_strings(ctx, s, a[0]));
    }
    if (name == "format") return str(str_format(ctx, s, args));
    if (name == "splitlines") {
        Args a(args, name, {"keepends"});
        return str_list(ctx, text::splitlines(s, a.boolean(0, false)));
    }
    if (name == "isdigit") return Value::boolean(all_cps(s, text::is_digit));
    if (name == "isalpha") return Value::boolean(all_cps(s, text::is_alpha));
    if (name == "isalnum")
        return Value::boolean(
            all_cps(s, [](char32_t c) { return text::is_alpha(c) || text::is_digit(c); }));
    if (name == "isspace") return Value::boolean(all_cps(s, text::is_space));
    if (name == "islower" || name == "isupper") {
        bool any = false, ok = true;
        for (size_t i = 0; i < s.size();) {
            char32_t c = text::next_cp(s, i);
            if (!text::is_cased(c)) continue;
            any = true;
            bool low = text::to_lower(c) == c && text::to_upper(c) != c;
            bool up = text::to_upper(c) == c && text::to_lower(c) != c;
            ok &= name == "islower" ? low : up;
        }
        return Value::boolean(any && ok);
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        Args a(args, name, {"width", "fillchar"});
        std::string fill = a.opt_string(1).value_or(" ");
        if (text::length(fill) != 1) fail("The fill character must be exactly one character long");
        int64_t width = a.integer(0, 0);
        ctx.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
        return str(pad(s, width, fill, name == "ljust" ? -1 : name == "rjust" ? 1 : 0));
    }
    if (name == "zfill") {
        Args a(args, name, {"width"});
        int64_t width = a.integer(0, 0);
        ctx.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
        int64_t n = static_cast<int64_t>(text::length(s));
        if (width <= n) return self;
        bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
        std::string zeros(static_cast<size_t>(width - n), '0');
        return str(sign ? s.substr(0, 1) + zeros + s.substr(1) : zeros + s);
    }
    if (name == "partition" || name == "rpartition") {
        Args a(args, name, {"sep"});
        auto sep = a.opt_string(0);
        if (!sep || sep->empty()) fail("empty separator");
        size_t at = name == "partition" ? s.find(*sep) : s.rfind(*sep);
        std::vector<Value> parts;
        if (at == std::string::npos) {
            parts = name == "partition" ? std::vector<Value>{self, str(""), str("")}
                                        : std::vector<Value>{str(""), str(""), self};
        } else {
            parts = {str(s.substr(0, at)), str(*sep), str(s.substr(at + sep->size()))};
        }
        return ctx.heap().new_tuple(std::move(parts));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        Args a(args, name, {"affix"});
        std::string x = a.opt_string(0).value_or("");
        bool pre = name == "removeprefix";
        if (x.size() <= s.size() && (pre ? s.compare(0, x.size(), x) == 0
                                         : s.compare(s.size() - x.size(), x.size(), x) == 0))
            return str(pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
        return self;
    }
    return std::nullopt;
}

int64_t find_index(const std::vector<Value>& items, const Value& x) {
    for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], x)) return static_cast<int64_t>(i);
    return -1;
}

std::optional<Value> list_method(Context& ctx, const Value& self, const std::string& name,
                                 CallArgs& args) {
    std::vector<Value>& items = self.list().items;
    bool tuple = self.is_tuple();
    if (name == "index") {
        Args a(args, name, {"value"});
        int64_t i = find_index(items, a[0]);
        if (i < 0) fail("{} is not in {}", repr(a[0]), tuple ? "tuple" : "list");
        return Value::integer(i);
    }
    if (name == "count") {
        Args a(args, name, {"value"});
        int64_t n = 0;
        for (const Value& v : items) n += equals(v, a[0]);
        return Value::integer(n);
    }
    if (tuple) return std::nullopt;
    if (name == "append") {
        Args a(args, name, {"object"});
        check_list_items(items.size() + 1);
        items.push_back(a[0]);
        return Value::none();
    }
    if (name == "pop") {
        Args a(args, name, {"index"});
        if (items.empty()) fail("pop from empty list");
        int64_t n = static_cast<int64_t>(items.size());
        int64_t i = a.integer(0, -1);
        if (i < 0) i += n;
        if (i < 0 || i >= n) fail("pop index out of range");
        Value v = items[static_cast<size_t>(i)];
        items.erase(items.begin() + i);
        return v;
    }
    if (name == "extend") {
        Args a(args, name, {"iterable"});
        std::vector<Value> more = iterate(a[0]);
        check_list_items(items.size() + more.size());
        items.insert(items.end(), more.begin(), more.end());
        return Value::none();
    }
    if (name == "insert") {
        Args a(args, name, {"index", "object"});
        int64_t n = static_cast<int64_t>(items.size());
        int64_t i = a.integer(0, 0);
        if (i < 0) i = std::max<int64_t>(0, i + n);
        i = std::min(i, n);
        check_list_items(items.size() + 1);
        items.insert(items.begin() + i, a[1]);
        return Value::none();
    }
    if (name == "remove") {
        Args a(args, name, {"value"});
        int64_t i = find_index(items, a[0]);
        if (i < 0) fail("list.remove(x): x not in list");
        items.erase(items.begin() + i);
        return Value::none();
    }
    if (name == "reverse") {
        Args a(args, name, {});
        std::reverse(items.begin(), items.end());
        return Value::none();
    }
    if (name == "sort") {
        Args a(args, name, {"key", "reverse"});
        std::vector<Value> keys = items;
        if (a.given(0) && !a[0].is_none()) {
            for (Value& k : keys) {
                CallArgs ka;
                ka.positional.push_back(k);
                k = ctx.call(a[0], ka);
            }
        }
        std::vector<size_t> order(items.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        bool rev = a.boolean(1, false);
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
            return rev ? less(keys[y], keys[x]) : less(keys[x], keys[y]);
        });
        std::vector<Value> sorted;
        for (size_t i : order) sorted.push_back(items[i]);
        items = std::move(sorted);
        return Value::none();
    }
    if (name == "copy") return ctx.heap().new_list(items);
    if (name == "clear") {
        items.clear();
        return Value::none();
    }
    return std::nullopt;
}

std::optional<Value> dict_method(Context& ctx, const Value& self, const std::string& name,
                                 CallArgs& args) {
    DictObject& d = self.dict();
    if (name == "get") {
        Args a(args, name, {"key", "default"});
        const Value* v = d.find(a[0]);
        return v ? *v : a.given(1) ? a[1] : Value::none();
    }
    if (name == "items" || name == "keys" || name == "values") {
        Args a(args, name, {});
        std::vector<Value> out;
        out.reserve(d.size());
        for (const auto& [k, v] : d.entries) {
            if (name == "items") {
                out.push_back(ctx.heap().new_tuple({k, v}));
            } else {
                out.push_back(name == "keys" ? k : v);
            }
        }
        Value list = ctx.heap().new_list(std::move(out));
        list.list().view = name == "items"  ? ListObject::View::DictItems
                           : name == "keys" ? ListObject::View::DictKeys
                                            : ListObject::View::DictValues;
        return list;
    }
    if (name == "update") {
        if (args.positional.size() > 1) fail("update expected at most 1 argument");
        if (!args.positional.empty()) {
            const Value& src = args.positional[0];
            if (src.is_dict()) {
                std::vector<std::pair<Value, Value>> copy = src.dict().entries;
                for (auto& [k, v] : copy) d.set(k, v);
            } else {
                for (const Value& pair : iterate(src)) {
                    std::vector<Value> kv = iterate(pair);
                    if (kv.size() != 2) fail("dictionary update sequence element has wrong length");
                    d.set(kv[0], kv[1]);
                }
            }
        }
        for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
        return Value::none();
    }
    if (name == "pop") {
        Args a(args, name, {"key", "default"});
        Value removed;
        if (d.erase(a[0], &removed)) return removed;
        if (a.given(1)) return a[1];
        fail("KeyError: {}", repr(a[0]));
    }
    if (name == "setdefault") {
        Args a(args, name, {"key", "default"});
        if (const Value* v = d.find(a[0])) return *v;
        Value v = a.given(1) ? a[1] : Value::none();
        d.set(a[0], v);
        return v;
    }
    if (name == "copy") {
        DictObject* c = ctx.heap().dict();
        c->entries = d.entries;
        return Value::dict(c);
    }
    if (name == "clear") {
        d.clear();
        return Value::none();
    }
    return std::nullopt;
}

}  // namespace

std::optional<Value> call_method(Context& ctx, const Value& obj, const std::string& name,
                                 CallArgs& args) {
    if (obj.is_list() && obj.list().view != ListObject::View::None &&
        !(obj.list().view == ListObject::View::Range && (name == "index" || name == "count")))
        return std::nullopt;  // dict views, ranges and generators are not lists
    switch (obj.kind()) {
        case Value::Kind::String:
            return string_method(ctx, obj, name, args);
        case Value::Kind::List:
        case Value::Kind::Tuple:
            return list_method(ctx, obj, name, args);
        case Value::Kind::Dict:
            return dict_method(ctx, obj, name, args);
        case Value::Kind::Loop:
            if (name == "cycle") {
                if (args.positional.empty()) fail("no items for cycling given");
                size_t n = args.positional.size();
                return args.positional[static_cast<size_t>(obj.loop().index0) % n];
            }
            if (name == "changed") {
                LoopObject& l = obj.loop();
                Value now = ctx.heap().new_tuple(args.positional);
                bool changed = !l.has_changed || !equals(now, l.last_changed);
                l.has_changed = true;
                l.last_changed = now;
                return Value::boolean(changed);
            }
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace myriad::jinja
