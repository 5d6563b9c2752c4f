#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "jinja/item_limit.h"
#include "jinja/text.h"

namespace myriad::jinja {

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}

Value Value::boolean(bool b) {
    Value v(Kind::Bool);
    v.u_.b = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v(Kind::Int);
    v.u_.i = i;
    return v;
}

Value Value::number(double f) {
    Value v(Kind::Float);
    v.u_.f = f;
    return v;
}

Value Value::string(std::string s) {
    return string(std::make_shared<const std::string>(std::move(s)));
}

Value Value::string(std::shared_ptr<const std::string> s) {
    Value v(Kind::String);
    v.s_ = std::move(s);
    return v;
}

// ---- dict ----------------------------------------------------------------------------------

namespace {

constexpr size_t kIndexFrom = 16;

bool hashable(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::List:
        case Value::Kind::Dict:
            return false;
        case Value::Kind::Tuple:
            return std::all_of(v.list().items.begin(), v.list().items.end(), hashable);
        default:
            return true;
    }
}

}  // namespace

void DictObject::rebuild_index() const {
    if (indexed_ > entries.size()) indexed_ = 0, index_.clear();
    for (; indexed_ < entries.size(); ++indexed_) {
        const Value& k = entries[indexed_].first;
        if (k.is_string()) index_.emplace(k.str(), indexed_);
    }
}

const Value* DictObject::find(std::string_view key) const {
    if (entries.size() >= kIndexFrom) {
        rebuild_index();
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries[it->second].second;
    }
    for (const auto& [k, v] : entries)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

const Value* DictObject::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.str()));
    if (!hashable(key)) fail("unhashable type: '{}'", type_name(key));
    for (const auto& [k, v] : entries)
        if (!k.is_string() && equals(k, key)) return &v;
    return nullptr;
}

void DictObject::set(const Value& key, Value value) {
    if (Value* existing = find(key)) {
        *existing = std::move(value);
        return;
    }
    entries.emplace_back(key, std::move(value));
}

bool DictObject::erase(const Value& key, Value* removed) {
    for (size_t i = 0; i < entries.size(); ++i) {
        const Value& k = entries[i].first;
        if (k.is_string() != key.is_string()) continue;
        if (key.is_string() ? k.str() == key.str() : equals(k, key)) {
            if (removed) *removed = std::move(entries[i].second);
            entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
            index_.clear();
            indexed_ = 0;
            return true;
        }
    }
    return false;
}

int64_t LoopObject::length() {
    if (cached_length < 0) cached_length = static_cast<int64_t>(items->items.size());
    return cached_length;
}

namespace {
thread_local size_t t_max_list_items = SIZE_MAX;
}

size_t max_list_items() {
    return t_max_list_items;
}

void check_list_items(size_t n) {
    if (n > t_max_list_items)
        fail("the template built a list of {} items past the limit of {} bytes ({} bytes an item)",
             n, t_max_list_items * kItemBytes, kItemBytes);
}

ListItemLimit::ListItemLimit(size_t max_bytes) : saved_(t_max_list_items) {
    t_max_list_items = max_bytes / kItemBytes;
}

ListItemLimit::~ListItemLimit() {
    t_max_list_items = saved_;
}

Value Heap::new_list(std::vector<Value> items) {
    check_list_items(items.size());
    ListObject* l = list();
    l->items = std::move(items);
    return Value::list(l);
}

Value Heap::new_tuple(std::vector<Value> items) {
    check_list_items(items.size());
    ListObject* l = list();
    l->items = std::move(items);
    return Value::tuple(l);
}

// ---- conversions ---------------------------------------------------------------------------

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return false;
        case Value::Kind::Bool:
            return v.as_bool();
        case Value::Kind::Int:
            return v.as_int() != 0;
        case Value::Kind::Float:
            return v.as_float() != 0.0;
        case Value::Kind::String:
            return !v.str().empty();
        case Value::Kind::List:
            return is_generator(v) || !v.list().items.empty();
        case Value::Kind::Tuple:
            return !v.list().items.empty();
        case Value::Kind::Dict:
            return v.dict().size() != 0;
        default:
            return true;
    }
}

bool is_generator(const Value& v) {
    return v.is_list() && v.list().view == ListObject::View::Generator;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci is "[-]D[.DDD]e[+-]XX": the shortest digits that read back as d.
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exp = std::atoi(sci.c_str() + e + 1);
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    std::string out = neg ? "-" : "";
    if (exp < -4 || exp >= 16) {
        out += digits[0];
        if (digits.size() > 1) out += "." + digits.substr(1);
        out += exp < 0 ? "e-" : "e+";
        std::string ex = std::to_string(std::abs(exp));
        if (ex.size() < 2) ex = "0" + ex;
        return out + ex;
    }
    if (exp < 0) return out + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    size_t int_digits = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_digits)
        return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
    return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

namespace {

struct Printer {
    std::vector<const Object*> open;  // containers being printed (Python prints cycles as ...)

    void value(std::string& out, const Value& v, bool as_repr) {
        switch (v.kind()) {
            case Value::Kind::Undefined:
                if (as_repr) out += "Undefined";
                return;
            case Value::Kind::None:
                out += "None";
                return;
            case Value::Kind::Bool:
                out += v.as_bool() ? "True" : "False";
                return;
            case Value::Kind::Int:
                out += std::to_string(v.as_int());
                return;
            case Value::Kind::Float:
                out += float_repr(v.as_float());
                return;
            case Value::Kind::String:
                if (as_repr)
                    out += text::repr(v.str());
                else
                    out += v.str();
                return;
            case Value::Kind::Callable:
                out += v.callable().repr();
                return;
            case Value::Kind::Loop:
                out += fmt::format("<LoopContext {}/{}>", v.loop().index0 + 1, v.loop().length());
                return;
            default:
                break;
        }
        const Object* obj = v.object();
        bool cycle = std::find(open.begin(), open.end(), obj) != open.end();
        if (!cycle && open.size() >= static_cast<size_t>(kMaxNesting))
            fail("value nested more than {} levels deep", kMaxNesting);
        switch (v.kind()) {
            case Value::Kind::List:
            case Value::Kind::Tuple: {
                bool tuple = v.is_tuple();
                if (cycle) {
                    out += tuple ? "(...)" : "[...]";
                    return;
                }
                const ListObject& l = v.list();
                if (l.view == ListObject::View::Generator) {
                    out += fmt::format("<{} object>", l.generator_type);
                    return;
                }
                if (l.view == ListObject::View::Range) {
                    out += fmt::format("range({}, {}", l.range[0], l.range[1]);
                    out += l.range[2] == 1 ? ")" : fmt::format(", {})", l.range[2]);
                    return;
                }
                const char* view = l.view == ListObject::View::DictKeys     ? "dict_keys("
                                   : l.view == ListObject::View::DictValues ? "dict_values("
                                   : l.view == ListObject::View::DictItems  ? "dict_items("
                                                                            : "";
                out += view;
                open.push_back(obj);
                const auto& items = l.items;
                out += tuple ? '(' : '[';
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) out += ", ";
                    value(out, items[i], true);
                }
                if (tuple && items.size() == 1) out += ',';
                out += tuple ? ')' : ']';
                if (*view) out += ')';
                open.pop_back();
                return;
            }
            case Value::Kind::Dict:
            case Value::Kind::Namespace: {
                bool ns = v.is_namespace();
                if (cycle) {
                    out += ns ? "<Namespace {...}>" : "{...}";
                    return;
                }
                open.push_back(obj);
                const DictObject& d = ns ? v.ns().attrs : v.dict();
                out += ns ? "<Namespace {" : "{";
                bool first = true;
                for (const auto& [k, val] : d.entries) {
                    if (!first) out += ", ";
                    first = false;
                    value(out, k, true);
                    out += ": ";
                    value(out, val, true);
                }
                out += ns ? "}>" : "}";
                open.pop_back();
                return;
            }
            default:
                return;
        }
    }
};

int numeric_cmp(const Value& a, const Value& b) {
    if (a.is_float() || b.is_float()) {
        double x = a.as_float(), y = b.as_float();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
}

bool equals_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxNesting) fail("value nested more than {} levels deep", kMaxNesting);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::String:
            return a.str() == b.str();
        case Value::Kind::List:
        case Value::Kind::Tuple: {
            if (a.list().view != b.list().view) return false;
            if (is_generator(a)) return a.object() == b.object();
            const auto& x = a.list().items;
            const auto& y = b.list().items;
            if (x.size() != y.size()) return false;
            if (&x == &y) return true;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equals_at(x[i], y[i], depth + 1)) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const DictObject& x = a.dict();
            const DictObject& y = b.dict();
            if (x.size() != y.size()) return false;
            if (&x == &y) return true;
            for (const auto& [k, v] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !equals_at(v, *other, depth + 1)) return false;
            }
            return true;
        }
        default:
            return a.object() == b.object();
    }
}

bool less_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxNesting) fail("value nested more than {} levels deep", kMaxNesting);
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) return numeric_cmp(a, b) < 0;
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.kind() == b.kind() && a.is_sequence()) {
        const auto& x = a.list().items;
        const auto& y = b.list().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals_at(x[i], y[i], depth + 1)) continue;
            return less_at(x[i], y[i], depth + 1);
        }
        return x.size() < y.size();
    }
    fail("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

}  // namespace

void append_str(std::string& out, const Value& v) {
    Printer p;
    p.value(out, v, false);
}

std::string to_str(const Value& v) {
    if (v.is_string()) return v.str();
    std::string out;
    append_str(out, v);
    return out;
}

std::string repr(const Value& v) {
    std::string out;
    Printer p;
    p.value(out, v, true);
    return out;
}

bool equals(const Value& a, const Value& b) {
    return equals_at(a, b, 0);
}
bool less(const Value& a, const Value& b) {
    return less_at(a, b, 0);
}

std::string_view type_name(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "Undefined";
        case Value::Kind::None:
            return "NoneType";
        case Value::Kind::Bool:
            return "bool";
        case Value::Kind::Int:
            return "int";
        case Value::Kind::Float:
            return "float";
        case Value::Kind::String:
            return "str";
        case Value::Kind::List:
            switch (v.list().view) {
                case ListObject::View::DictKeys:
                    return "dict_keys";
                case ListObject::View::DictValues:
                    return "dict_values";
                case ListObject::View::DictItems:
                    return "dict_items";
                case ListObject::View::Range:
                    return "range";
                case ListObject::View::Generator:
                    return v.list().generator_type;
                default:
                    return "list";
            }
        case Value::Kind::Tuple:
            return "tuple";
        case Value::Kind::Dict:
            return "dict";
        case Value::Kind::Namespace:
            return "Namespace";
        case Value::Kind::Callable:
            return v.callable().repr().rfind("<Macro", 0) == 0 ? "Macro"
                                                               : "builtin_function_or_method";
        case Value::Kind::Loop:
            return "LoopContext";
    }
    return "object";
}

std::string object_description(const Value& v) {
    if (v.is_none()) return "None";
    return fmt::format("{} object", type_name(v));
}

void raise_undefined(const Value& v) {
    std::string hint = v.undefined_hint();
    fail("{}", hint.empty() ? std::string("undefined value") : hint);
}

}  // namespace myriad::jinja
