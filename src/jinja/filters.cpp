// jinja2's builtin filters, with Hugging Face's tojson (ensure_ascii=False, indent, separators,
// sort_keys; key order kept).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "jinja/builtins.h"
#include "jinja/json.h"
#include "jinja/text.h"

namespace myriad::jinja {

namespace {

Value str(std::string s) {
    return Value::string(std::move(s));
}

// jinja2's make_attrgetter: "a.b.0" walks items (then attributes) part by part.
Value get_path(Context& ctx, Value item, const Value& attribute, const Value& fallback) {
    std::vector<Value> parts;
    if (attribute.is_string()) {
        for (const std::string& p : text::split(attribute.str(), std::string("."), -1)) {
            bool digits = !p.empty() && p.size() < 19 &&
                          p.find_first_not_of("0123456789") == std::string::npos;
            parts.push_back(digits ? Value::integer(std::atoll(p.c_str())) : Value::string(p));
        }
    } else {
        parts.push_back(attribute);
    }
    for (const Value& p : parts) {
        item = get_item(ctx, item, p);
        if (!fallback.is_undefined() && item.is_undefined()) item = fallback;
    }
    return item;
}

Value lowered(const Value& v, bool case_sensitive) {
    return !case_sensitive && v.is_string() ? Value::string(text::lower(v.str())) : v;
}

Value list_of(Context& ctx, std::vector<Value> items) {
    return ctx.heap().new_list(std::move(items));
}

// What jinja2's lazy filters return: a single-pass generator. An error while producing it
// surfaces where it is consumed, as in Python.
template <typename F>
Value generator(Context& ctx, const char* type, F produce) {
    Value g = ctx.heap().new_list();
    ListObject& l = g.list();
    l.view = ListObject::View::Generator;
    l.generator_type = type;
    try {
        l.items = produce();
    } catch (const RenderFailure& e) {
        l.items.clear();
        l.pending_error = e.what();
    }
    return g;
}

Value f_attr(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "attr", {"name"});
    return get_attr(ctx, v, a.opt_string(0).value_or(""));
}

Value batch_eager(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "batch", {"linecount", "fill_with"});
    int64_t n = a.integer(0, 1);
    if (n <= 0) fail("batch(): linecount must be positive");
    std::vector<Value> out, cur;
    for (const Value& x : iterate(v)) {
        cur.push_back(x);
        if (static_cast<int64_t>(cur.size()) == n)
            out.push_back(list_of(ctx, std::move(cur))), cur.clear();
    }
    if (!cur.empty()) {
        if (a.given(1))
            while (static_cast<int64_t>(cur.size()) < n) cur.push_back(a[1]);
        out.push_back(list_of(ctx, std::move(cur)));
    }
    return list_of(ctx, std::move(out));
}

Value f_capitalize(Context&, const Value& v, CallArgs&) {
    return str(text::capitalize(to_str(v)));
}
Value f_lower(Context&, const Value& v, CallArgs&) {
    return str(text::lower(to_str(v)));
}
Value f_upper(Context&, const Value& v, CallArgs&) {
    return str(text::upper(to_str(v)));
}
Value f_title(Context&, const Value& v, CallArgs&) {
    return str(text::jinja_title(to_str(v)));
}
Value f_string(Context&, const Value& v, CallArgs&) {
    return str(to_str(v));
}
Value f_length(Context&, const Value& v, CallArgs&) {
    return Value::integer(static_cast<int64_t>(length(v)));
}
Value f_list(Context& ctx, const Value& v, CallArgs&) {
    return list_of(ctx, iterate(v));
}
Value f_pprint(Context&, const Value& v, CallArgs&) {
    return str(repr(v));
}

Value f_center(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "center", {"width"});
    CallArgs m;
    m.positional.push_back(Value::integer(a.integer(0, 80)));
    return *call_method(ctx, str(to_str(v)), "center", m);
}

Value f_default(Context&, const Value& v, CallArgs& args) {
    Args a(args, "default", {"default_value", "boolean"});
    if (v.is_undefined() || (a.boolean(1, false) && !truthy(v))) return a.given(0) ? a[0] : str("");
    return v;
}

Value f_dictsort(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "dictsort", {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) fail("dictsort(): expected a dict, got {}", type_name(v));
    bool cs = a.boolean(0, false), rev = a.boolean(2, false);
    std::string by = a.opt_string(1).value_or("key");
    if (by != "key" && by != "value") fail("You can only sort by either 'key' or 'value'");
    auto entries = v.dict().entries;
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
        const Value& p = by == "key" ? x.first : x.second;
        const Value& q = by == "key" ? y.first : y.second;
        return rev ? less(lowered(q, cs), lowered(p, cs)) : less(lowered(p, cs), lowered(q, cs));
    });
    std::vector<Value> out;
    for (auto& [k, val] : entries) out.push_back(ctx.heap().new_tuple({k, val}));
    return list_of(ctx, std::move(out));
}

Value f_escape(Context&, const Value& v, CallArgs&) {
    std::string out;
    for (char c : to_str(v)) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return str(std::move(out));
}

Value f_first(Context&, const Value& v, CallArgs&) {
    std::vector<Value> items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Context&, const Value& v, CallArgs&) {
    if (is_generator(v)) fail("'{}' object is not reversible", type_name(v));
    std::vector<Value> items = iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_format(Context& ctx, const Value& v, CallArgs& args) {
    if (!args.keyword.empty() && !args.positional.empty())
        fail("can't handle positional and keyword arguments at the same time");
    Value params;
    if (!args.keyword.empty()) {
        DictObject* d = ctx.heap().dict();
        for (const auto& [k, x] : args.keyword) d->set(Value::string(k), x);
        params = Value::dict(d);
    } else {
        params = ctx.heap().new_tuple(args.positional);
    }
    return str(percent_format(ctx, to_str(v), params));
}

Value f_indent(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "indent", {"width", "first", "blank"});
    if (v.is_undefined()) raise_undefined(v);  // jinja2 appends to the value itself
    if (!v.is_string()) fail("unsupported operand type(s) for +=: '{}' and 'str'", type_name(v));
    std::string ind =
        a[0].is_string()
            ? a[0].str()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(a.integer(0, 4), 0, 1 << 16)),
                          ' ');
    std::vector<std::string> lines = text::splitlines(to_str(v) + "\n", false);
    std::string out;
    if (a.boolean(2, false)) {
        for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + ind : "") + lines[i];
    } else {
        out = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            out += "\n";
            if (!lines[i].empty()) out += ind;
            out += lines[i];
            ctx.check_size(out.size());
        }
    }
    if (a.boolean(1, false)) out = ind + out;
    return str(std::move(out));
}

Value items_eager(Context& ctx, const Value& v) {
    if (v.is_undefined()) return list_of(ctx, {});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, x] : v.dict().entries) out.push_back(ctx.heap().new_tuple({k, x}));
    return list_of(ctx, std::move(out));
}

Value f_join(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "join", {"d", "attribute"});
    std::string sep = a.given(0) ? to_str(a[0]) : "";
    std::string out;
    bool first = true;
    for (const Value& x : iterate(v)) {
        if (!first) out += sep;
        first = false;
        append_str(out, a.given(1) ? get_path(ctx, x, a[1], Value()) : x);
        ctx.check_size(out.size());
    }
    return str(std::move(out));
}

Value map_eager(Context& ctx, const Value& v, CallArgs& args) {
    std::vector<Value> out;
    const Value* attribute = nullptr;
    Value fallback;
    for (const auto& [k, x] : args.keyword) {
        if (k == "attribute")
            attribute = &x;
        else if (k == "default")
            fallback = x;
    }
    if (attribute) {
        for (const Value& x : iterate(v)) out.push_back(get_path(ctx, x, *attribute, fallback));
        return list_of(ctx, std::move(out));
    }
    if (args.positional.empty() || !args.positional[0].is_string())
        fail("map requires a filter argument");
    FilterFn f = find_filter(args.positional[0].str());
    if (!f) fail("No filter named '{}'", args.positional[0].str());
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& x : iterate(v)) {
        CallArgs copy = rest;
        out.push_back(f(ctx, x, copy));
    }
    return list_of(ctx, std::move(out));
}

Value min_max(Context& ctx, const Value& v, CallArgs& args, bool want_max) {
    Args a(args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
    bool cs = a.boolean(0, false);
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    auto key = [&](const Value& x) {
        return lowered(a.given(1) ? get_path(ctx, x, a[1], Value()) : x, cs);
    };
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        bool better = want_max ? less(key(items[best]), key(items[i]))
                               : less(key(items[i]), key(items[best]));
        if (better) best = i;
    }
    return items[best];
}
Value f_max(Context& ctx, const Value& v, CallArgs& args) {
    return min_max(ctx, v, args, true);
}
Value f_min(Context& ctx, const Value& v, CallArgs& args) {
    return min_max(ctx, v, args, false);
}

// select / reject / selectattr / rejectattr.
Value select_items(Context& ctx, const Value& v, CallArgs& args, bool by_attr, bool keep) {
    size_t k = 0;
    Value attribute;
    if (by_attr) {
        if (args.positional.empty()) fail("Missing parameter for attribute name");
        attribute = args.positional[k++];
    }
    TestFn test = nullptr;
    if (k < args.positional.size()) {
        if (!args.positional[k].is_string()) fail("test name must be a string");
        test = find_test(args.positional[k].str());
        if (!test) fail("No test named '{}'", args.positional[k].str());
        ++k;
    }
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(k),
                           args.positional.end());
    rest.keyword = args.keyword;
    std::vector<Value> out;
    for (const Value& x : iterate(v)) {
        Value subject = by_attr ? get_path(ctx, x, attribute, Value()) : x;
        CallArgs copy = rest;
        bool ok = test ? test(ctx, subject, copy) : truthy(subject);
        if (ok == keep) out.push_back(x);
    }
    return list_of(ctx, std::move(out));
}
Value lazy_select(Context& c, const Value& v, CallArgs& a, bool by_attr, bool keep) {
    return generator(c, "generator", [&] { return iterate(select_items(c, v, a, by_attr, keep)); });
}
Value f_select(Context& c, const Value& v, CallArgs& a) {
    return lazy_select(c, v, a, false, true);
}
Value f_reject(Context& c, const Value& v, CallArgs& a) {
    return lazy_select(c, v, a, false, false);
}
Value f_selectattr(Context& c, const Value& v, CallArgs& a) {
    return lazy_select(c, v, a, true, true);
}
Value f_rejectattr(Context& c, const Value& v, CallArgs& a) {
    return lazy_select(c, v, a, true, false);
}

Value f_replace(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "replace", {"old", "new", "count"});
    std::string s = to_str(v), old = to_str(a[0]), repl = to_str(a[1]);
    ctx.check_size(s.size() + static_cast<size_t>(text::count(s, old)) * repl.size());
    std::string out = text::replace(s, old, repl, a.integer(2, -1));
    ctx.check_size(out.size());
    return str(std::move(out));
}

Value f_reverse(Context& ctx, const Value& v, CallArgs&) {
    if (v.is_string()) {
        std::vector<char32_t> cps = text::code_points(v.str());
        std::string out;
        for (size_t i = cps.size(); i-- > 0;) text::append_utf8(out, cps[i]);
        return str(std::move(out));
    }
    // reversed(): an iterator over lists, tuples, ranges and dicts.
    if (!v.is_undefined() && !v.is_sequence() && !v.is_dict()) fail("argument must be iterable");
    if (is_generator(v)) fail("'{}' object is not reversible", type_name(v));
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    const char* type = v.is_dict() ? "dict_reversekeyiterator"
                       : v.is_list() && v.list().view == ListObject::View::None
                           ? "list_reverseiterator"
                           : "reversed";
    return generator(ctx, type, [&] { return std::move(items); });
}

Value f_safe(Context&, const Value& v, CallArgs&) {
    return str(to_str(v));
}

Value f_sort(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "sort", {"reverse", "case_sensitive", "attribute"});
    bool rev = a.boolean(0, false), cs = a.boolean(1, false);
    std::vector<Value> items = iterate(v);
    std::vector<Value> attrs;
    if (a.given(2)) {
        if (a[2].is_string()) {
            for (const std::string& p : text::split(a[2].str(), std::string(","), -1))
                attrs.push_back(Value::string(p));
        } else {
            attrs.push_back(a[2]);
        }
    }
    std::vector<std::vector<Value>> keys;
    for (const Value& x : items) {
        std::vector<Value> k;
        if (attrs.empty()) k.push_back(lowered(x, cs));
        for (const Value& at : attrs) k.push_back(lowered(get_path(ctx, x, at, Value()), cs));
        keys.push_back(std::move(k));
    }
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key_less = [&](size_t x, size_t y) {
        for (size_t i = 0; i < keys[x].size(); ++i) {
            if (equals(keys[x][i], keys[y][i])) continue;
            return less(keys[x][i], keys[y][i]);
        }
        return false;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return rev ? key_less(y, x) : key_less(x, y); });
    std::vector<Value> out;
    for (size_t i : order) out.push_back(items[i]);
    return list_of(ctx, std::move(out));
}

Value f_sum(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "sum", {"attribute", "start"});
    Value total = a.given(1) ? a[1] : Value::integer(0);
    for (const Value& x : iterate(v))
        total = binary_op(ctx, Op::Add, total, a.given(0) ? get_path(ctx, x, a[0], Value()) : x);
    return total;
}

Value f_tojson(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonDumpOptions o;
    o.ensure_ascii = a.boolean(0, false);
    if (a.given(1) && !a[1].is_none()) {
        if (a[1].is_string()) {
            o.indent = a[1].str();
        } else {
            o.indent = std::string(
                static_cast<size_t>(std::clamp<int64_t>(a.integer(1, 0), 0, 1 << 10)), ' ');
        }
    }
    if (a.given(2) && !a[2].is_none()) {
        std::vector<Value> seps = iterate(a[2]);
        if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
            fail("tojson(): separators must be a pair of strings");
        o.item_separator = seps[0].str();
        o.key_separator = seps[1].str();
    }
    o.sort_keys = a.boolean(3, false);
    return str(to_json(v, o, ctx.max_output_bytes()));
}

Value f_trim(Context&, const Value& v, CallArgs& args) {
    Args a(args, "trim", {"chars"});
    return str(text::strip(to_str(v), a.opt_string(0), true, true));
}

Value f_truncate(Context&, const Value& v, CallArgs& args) {
    Args a(args, "truncate", {"length", "killwords", "end", "leeway"});
    int64_t len = a.integer(0, 255), leeway = a.integer(3, 5);
    if (!v.is_string()) {  // jinja2 works on the value itself: len() must exist
        if (static_cast<int64_t>(length(v)) <= len + leeway) return v;
        fail("truncate() of a {} longer than the limit", type_name(v));
    }
    std::string s = v.str();
    std::string end = a.opt_string(2).value_or("...");
    int64_t end_len = static_cast<int64_t>(text::length(end));
    if (len < end_len) fail("expected length >= {}, got {}", end_len, len);
    if (leeway < 0) fail("expected leeway >= 0, got {}", leeway);
    if (static_cast<int64_t>(text::length(s)) <= len + leeway) return str(s);
    std::string head = s.substr(0, text::byte_offset(s, static_cast<size_t>(len - end_len)));
    if (a.boolean(1, false)) return str(head + end);
    return str(text::rsplit(head, std::string(" "), 1)[0] + end);
}

Value unique_eager(Context& ctx, const Value& v, CallArgs& args) {
    Args a(args, "unique", {"case_sensitive", "attribute"});
    bool cs = a.boolean(0, false);
    std::vector<Value> out, seen;
    for (const Value& x : iterate(v)) {
        Value key = lowered(a.given(1) ? get_path(ctx, x, a[1], Value()) : x, cs);
        bool dup = false;
        for (const Value& s : seen)
            if (equals(s, key)) dup = true;
        if (dup) continue;
        seen.push_back(key);
        out.push_back(x);
    }
    return list_of(ctx, std::move(out));
}

Value f_wordcount(Context&, const Value& v, CallArgs&) {
    std::string s = to_str(v);
    int64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.size();) {
        char32_t c = text::next_cp(s, i);
        bool w = c == '_' || text::is_alpha(c) || text::is_digit(c);
        if (w && !in_word) ++words;
        in_word = w;
    }
    return Value::integer(words);
}

Value f_batch(Context& c, const Value& v, CallArgs& a) {
    return generator(c, "generator", [&] { return iterate(batch_eager(c, v, a)); });
}
Value f_items(Context& c, const Value& v, CallArgs&) {
    return generator(c, "generator", [&] { return iterate(items_eager(c, v)); });
}
Value f_map(Context& c, const Value& v, CallArgs& a) {
    return generator(c, "generator", [&] { return iterate(map_eager(c, v, a)); });
}
Value f_unique(Context& c, const Value& v, CallArgs& a) {
    return generator(c, "generator", [&] { return iterate(unique_eager(c, v, a)); });
}

const std::pair<std::string_view, FilterFn> kFilters[] = {
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"forceescape", f_escape},
    {"format", f_format},
    {"indent", f_indent},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_pprint},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
    for (const auto& [n, fn] : kFilters)
        if (n == name) return fn;
    return find_number_filter(name);
}

}  // namespace myriad::jinja
