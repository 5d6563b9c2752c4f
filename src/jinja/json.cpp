#include "jinja/json.h"

#include <algorithm>
#include <cmath>

#include "jinja/text.h"

namespace myriad::jinja {

namespace {

Value from_json_at(Heap& heap, const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxNesting) fail("JSON nested more than {} levels deep", kMaxNesting);
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX))
                fail("integer {} is past the 64-bit range templates support", u);
            return Value::integer(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            ListObject* l = heap.list();
            l->items.reserve(j.size());
            for (const auto& item : j) l->items.push_back(from_json_at(heap, item, depth + 1));
            return Value::list(l);
        }
        case nlohmann::ordered_json::value_t::object: {
            DictObject* d = heap.dict();
            d->entries.reserve(j.size());
            for (const auto& [k, v] : j.items())
                d->entries.emplace_back(Value::string(k), from_json_at(heap, v, depth + 1));
            return Value::dict(d);
        }
        default:
            fail("JSON value of an unsupported type (binary)");
    }
}

class Dumper {
  public:
    Dumper(const JsonDumpOptions& o, size_t max_bytes) : opt_(o), max_(max_bytes) {
        item_sep_ = o.item_separator ? *o.item_separator : o.indent ? "," : ", ";
        key_sep_ = o.key_separator ? *o.key_separator : ": ";
    }

    std::string run(const Value& v) {
        value(v, 0);
        return std::move(out_);
    }

  private:
    void check() {
        if (out_.size() > max_) fail("tojson output is longer than the limit of {} bytes", max_);
    }

    void newline(int level) {
        if (!opt_.indent) return;
        out_ += '\n';
        for (int i = 0; i < level; ++i) out_ += *opt_.indent;
        check();
    }

    void string(const std::string& s) {
        static const char* hex = "0123456789abcdef";
        out_ += '"';
        for (size_t i = 0; i < s.size();) {
            char32_t cp = text::next_cp(s, i);
            switch (cp) {
                case '"':
                    out_ += "\\\"";
                    continue;
                case '\\':
                    out_ += "\\\\";
                    continue;
                case '\n':
                    out_ += "\\n";
                    continue;
                case '\r':
                    out_ += "\\r";
                    continue;
                case '\t':
                    out_ += "\\t";
                    continue;
                case '\b':
                    out_ += "\\b";
                    continue;
                case '\f':
                    out_ += "\\f";
                    continue;
                default:
                    break;
            }
            bool escape = cp < 0x20 || (opt_.ensure_ascii && cp >= 0x7F);
            if (!escape) {
                text::append_utf8(out_, cp);
                continue;
            }
            auto u = [&](char32_t unit) {
                out_ += "\\u";
                for (int k = 3; k >= 0; --k) out_ += hex[(unit >> (4 * k)) & 0xF];
            };
            if (cp >= 0x10000) {
                char32_t c = cp - 0x10000;
                u(0xD800 + (c >> 10));
                u(0xDC00 + (c & 0x3FF));
            } else {
                u(cp);
            }
        }
        out_ += '"';
        check();
    }

    static std::string number(double d) {
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
        return float_repr(d);
    }

    std::string key_text(const Value& k) {
        switch (k.kind()) {
            case Value::Kind::String:
                return k.str();
            case Value::Kind::Bool:
                return k.as_bool() ? "true" : "false";
            case Value::Kind::None:
                return "null";
            case Value::Kind::Int:
                return std::to_string(k.as_int());
            case Value::Kind::Float:
                return number(k.as_float());
            default:
                fail("keys must be str, int, float, bool or None, not {}", type_name(k));
        }
    }

    void value(const Value& v, int level) {
        switch (v.kind()) {
            case Value::Kind::None:
                out_ += "null";
                return;
            case Value::Kind::Bool:
                out_ += v.as_bool() ? "true" : "false";
                return;
            case Value::Kind::Int:
                out_ += std::to_string(v.as_int());
                return;
            case Value::Kind::Float:
                out_ += number(v.as_float());
                return;
            case Value::Kind::String:
                string(v.str());
                return;
            case Value::Kind::List:
            case Value::Kind::Tuple:
            case Value::Kind::Dict:
                break;
            default:
                fail("Object of type {} is not JSON serializable", type_name(v));
        }
        if (v.is_list() && v.list().view != ListObject::View::None)  // dict views, generators
            fail("Object of type {} is not JSON serializable", type_name(v));
        const Object* obj = v.object();
        if (std::find(open_.begin(), open_.end(), obj) != open_.end())
            fail("Circular reference detected");
        if (open_.size() >= static_cast<size_t>(kMaxNesting))
            fail("value nested more than {} levels deep", kMaxNesting);
        open_.push_back(obj);
        if (v.is_dict()) {
            std::vector<const std::pair<Value, Value>*> entries;
            for (const auto& e : v.dict().entries) entries.push_back(&e);
            if (opt_.sort_keys)
                std::stable_sort(entries.begin(), entries.end(),
                                 [](auto* a, auto* b) { return less(a->first, b->first); });
            out_ += '{';
            if (!entries.empty()) {
                for (size_t i = 0; i < entries.size(); ++i) {
                    if (i) out_ += item_sep_;
                    newline(level + 1);
                    string(key_text(entries[i]->first));
                    out_ += key_sep_;
                    value(entries[i]->second, level + 1);
                }
                newline(level);
            }
            out_ += '}';
        } else {
            const auto& items = v.list().items;
            out_ += '[';
            if (!items.empty()) {
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) out_ += item_sep_;
                    newline(level + 1);
                    value(items[i], level + 1);
                }
                newline(level);
            }
            out_ += ']';
        }
        open_.pop_back();
        check();
    }

    const JsonDumpOptions& opt_;
    size_t max_;
    std::string item_sep_, key_sep_;
    std::string out_;
    std::vector<const Object*> open_;
};

}  // namespace

Value from_json(Heap& heap, const nlohmann::ordered_json& j) {
    return from_json_at(heap, j, 0);
}

std::string to_json(const Value& v, const JsonDumpOptions& options, size_t max_bytes) {
    return Dumper(options, max_bytes).run(v);
}

}  // namespace myriad::jinja
