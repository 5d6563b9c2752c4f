// The compiler walks the schema once; every $ref target becomes one rule (so recursion is a
// cycle of rules), every other schema an element. Objects: properties in schema order, each
// optional one skippable, then additional properties; arrays: prefix items then items, counted.
#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>

#include "grammar/grammar_cache.h"
#include "grammar/json_formats.h"
#include "grammar/json_text.h"
#include "grammar/number_grammar.h"
#include "grammar/regex_grammar.h"
#include "grammar/schema_merge.h"
#include "util/error.h"

namespace myriad::grammar {
namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxMergeDepth = 64;
constexpr int64_t kMaxCount = 10000;  // largest maxItems / maxLength spelled out as rules

const char* kAnnotations[] = {"title",         "description", "default",         "examples",
                              "$schema",       "$id",         "$comment",        "deprecated",
                              "readOnly",      "writeOnly",   "$defs",           "definitions",
                              "nullable",      "$anchor",     "contentEncoding", "contentMediaType",
                              "discriminator", "strict"};
const char* kKeywords[] = {"type",
                           "properties",
                           "required",
                           "additionalProperties",
                           "enum",
                           "const",
                           "anyOf",
                           "oneOf",
                           "allOf",
                           "$ref",
                           "items",
                           "prefixItems",
                           "additionalItems",
                           "minItems",
                           "maxItems",
                           "minLength",
                           "maxLength",
                           "pattern",
                           "format",
                           "minimum",
                           "maximum",
                           "exclusiveMinimum",
                           "exclusiveMaximum"};
const char* kTypes[] = {"null", "boolean", "object", "array", "string", "number", "integer"};

template <size_t N>
bool in(const char* const (&list)[N], const std::string& k) {
    for (const char* x : list)
        if (k == x) return true;
    return false;
}

std::string quote(const std::string& s) {
    return json(s).dump();
}

class Compiler {
  public:
    Compiler(const json& root, const SchemaOptions& opt) : root_(root), opt_(opt), b_(own_) {}
    // Writing into another builder (a grammar that holds schema values among other text).
    Compiler(const json& root, const SchemaOptions& opt, GrammarBuilder& into)
        : root_(root), opt_(opt), b_(into) {}

    Element value() { return compile(root_, ""); }

    std::shared_ptr<const Grammar> run() {
        Element top = compile(root_, "");
        RuleId r = b_.new_rule();
        b_.add_alt(r, {top});
        return std::make_shared<const Grammar>(std::move(b_), r, "the JSON schema");
    }

    std::shared_ptr<const Grammar> any(bool object_only) {
        Element top = object_only ? any_object() : any_value();
        RuleId r = b_.new_rule();
        b_.add_alt(r, {top});
        return std::make_shared<const Grammar>(std::move(b_), r, "json_object");
    }

  private:
    static std::string at(const std::string& path) { return path.empty() ? "/" : path; }

    Element nothing() { return GrammarBuilder::ref(b_.new_rule()); }

    Element string_char() {
        if (!char_) char_ = any_json_string_char(b_);
        return *char_;
    }
    Element any_string() {
        if (!string_) string_ = b_.group({b_.byte('"'), b_.star(string_char()), b_.byte('"')});
        return *string_;
    }
    Element any_value() {
        if (!value_) build_any();
        return *value_;
    }
    Element any_object() {
        if (!object_) build_any();
        return *object_;
    }
    // The value rule exists before its body: objects and arrays hold values.
    void build_any() {
        RuleId v = b_.new_rule();
        value_ = GrammarBuilder::ref(v);
        Element kv = b_.group({any_string(), b_.byte(':'), *value_});
        object_ = b_.group({b_.byte('{'),
                            b_.optional(b_.group({kv, b_.star(b_.group({b_.byte(','), kv}))})),
                            b_.byte('}')});
        Element arr =
            b_.group({b_.byte('['),
                      b_.optional(b_.group({*value_, b_.star(b_.group({b_.byte(','), *value_}))})),
                      b_.byte(']')});
        b_.add_alt(v, {*object_});
        b_.add_alt(v, {arr});
        b_.add_alt(v, {any_string()});
        b_.add_alt(v, {number_grammar(b_, std::nullopt, std::nullopt)});
        for (const char* lit : {"true", "false", "null"}) b_.add_alt(v, b_.literal(lit));
    }

    json resolve(const json& s, int depth = 0) {
        if (!s.is_object() || !s.contains("$ref")) return s;
        if (depth > kMaxMergeDepth)
            bad_input("$ref chain deeper than {} (a cycle of bare $refs?)", kMaxMergeDepth);
        const json& target = pointer(s["$ref"]);
        json rest = s;
        rest.erase("$ref");
        bool bare = true;
        for (auto& [k, v] : rest.items())
            if (!in(kAnnotations, k)) bare = false;
        json t = resolve(target, depth + 1);
        if (bare) return t;
        return merge_schemas(rest, t, "$ref", [&](const json& x) { return resolve(x, depth + 1); });
    }

    const json& pointer(const json& ref) {
        if (!ref.is_string()) bad_input("'$ref' must be a string");
        std::string r = ref.get<std::string>();
        if (r.empty() || r[0] != '#')
            bad_input("$ref \"{}\": only local references (\"#...\") are supported", r);
        std::string p = r.substr(1);
        // Percent-decoding of the URI fragment.
        std::string dec;
        for (size_t i = 0; i < p.size(); ++i) {
            if (p[i] == '%' && i + 2 < p.size() && isxdigit(static_cast<unsigned char>(p[i + 1])) &&
                isxdigit(static_cast<unsigned char>(p[i + 2]))) {
                dec += static_cast<char>(std::stoi(p.substr(i + 1, 2), nullptr, 16));
                i += 2;
            } else {
                dec += p[i];
            }
        }
        if (!dec.empty() && dec[0] != '/')
            bad_input("$ref \"{}\": anchors are not supported, use a JSON pointer (#/$defs/...)",
                      r);
        try {
            const json& t = root_.at(json::json_pointer(dec));
            return t;
        } catch (const std::exception&) {
            bad_input("$ref \"{}\" points to nothing in the schema", r);
        }
    }

    Element ref_rule(const json& ref) {
        std::string key = ref.is_string() ? ref.get<std::string>() : "";
        auto it = refs_.find(key);
        if (it != refs_.end()) return GrammarBuilder::ref(it->second);
        const json& target = pointer(ref);
        RuleId r = b_.new_rule();
        refs_[key] = r;
        Element body = compile(target, key.substr(1));
        b_.add_alt(r, {body});
        return GrammarBuilder::ref(r);
    }

    Element compile(const json& s, const std::string& path) {
        if (++depth_ > 2000) bad_input("the schema nests deeper than 2000 levels at {}", at(path));
        Element e = compile_inner(s, path);
        --depth_;
        return e;
    }

    Element compile_inner(const json& s, const std::string& path) {
        if (s.is_boolean()) return s.get<bool>() ? any_value() : nothing();
        if (!s.is_object())
            bad_input("the schema at {} must be an object or a boolean, not {}", at(path),
                      s.dump());
        for (auto& [k, v] : s.items()) {
            if (in(kAnnotations, k) || in(kKeywords, k)) continue;
            if (k == "uniqueItems" && v == json(false)) continue;
            if (k == "minProperties" && v == json(0)) continue;
            bad_input("JSON Schema keyword '{}' at {} is not supported by the grammar", k,
                      at(path));
        }
        if (s.contains("allOf")) {
            if (!s["allOf"].is_array() || s["allOf"].empty())
                bad_input("'allOf' at {} must be a non-empty array", at(path));
            if (++merges_ > kMaxMergeDepth * 16)
                bad_input("allOf at {} expands too far (a recursive allOf?)", at(path));
            json rest = s;
            rest.erase("allOf");
            auto res = [&](const json& x) { return resolve(x); };
            for (const auto& branch : s["allOf"]) rest = merge_schemas(rest, branch, at(path), res);
            return compile(rest, path);
        }
        if (s.contains("$ref")) {
            bool bare = true;
            for (auto& [k, v] : s.items())
                if (k != "$ref" && !in(kAnnotations, k)) bare = false;
            if (bare) return ref_rule(s["$ref"]);
            if (++merges_ > kMaxMergeDepth * 16)
                bad_input("$ref at {} expands too far (a recursive $ref with siblings?)", at(path));
            return compile(resolve(s), path);
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!s.contains(key)) continue;
            const json& branches = s[key];
            if (!branches.is_array() || branches.empty())
                bad_input("'{}' at {} must be a non-empty array", key, at(path));
            json rest = s;
            rest.erase(key);
            bool siblings = false;
            for (auto& [k, v] : rest.items())
                if (!in(kAnnotations, k)) siblings = true;
            std::vector<json> merged;
            for (const auto& br : branches)
                merged.push_back(siblings ? merge_schemas(rest, br, at(path),
                                                          [&](const json& x) { return resolve(x); })
                                          : br);
            if (std::string(key) == "oneOf") check_disjoint(merged, path);
            std::vector<std::vector<Element>> alts;
            for (size_t i = 0; i < merged.size(); ++i)
                alts.push_back({compile(merged[i], path + "/" + key + "/" + std::to_string(i))});
            return b_.choice(std::move(alts));
        }
        std::vector<std::string> types;
        if (s.contains("type")) {
            const json& t = s["type"];
            auto add = [&](const json& x) {
                if (!x.is_string() || !in(kTypes, x.get<std::string>()))
                    bad_input("'type' at {}: {} is not a JSON Schema type", at(path), x.dump());
                types.push_back(x.get<std::string>());
            };
            if (t.is_array())
                for (const auto& x : t) add(x);
            else
                add(t);
        } else {
            types.assign(std::begin(kTypes), std::end(kTypes) - 1);  // number covers integer
        }
        if (s.contains("enum") || s.contains("const")) return enum_grammar(s, types, path);
        bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
        std::vector<std::vector<Element>> alts;
        for (const auto& t : types) {
            if (t == "integer" && has_number) continue;  // the number grammar's integers
            alts.push_back({type_grammar(s, t, path)});
        }
        if (alts.empty()) return nothing();
        return b_.choice(std::move(alts));
    }

    static std::vector<std::string> value_types(const json& s) {
        if (s.is_boolean())
            return s.get<bool>() ? std::vector<std::string>(std::begin(kTypes), std::end(kTypes))
                                 : std::vector<std::string>{};
        if (!s.is_object()) return {};
        if (s.contains("const") || s.contains("enum")) return {};  // compared by value below
        if (!s.contains("type"))
            return std::vector<std::string>(std::begin(kTypes), std::end(kTypes));
        std::vector<std::string> out;
        const json& t = s["type"];
        for (const auto& x : t.is_array() ? t : json::array({t}))
            if (x.is_string()) {
                out.push_back(x.get<std::string>());
                if (out.back() == "number") out.push_back("integer");
                if (out.back() == "integer") out.push_back("number");
            }
        return out;
    }

    // oneOf is generated as anyOf only where no document can match two branches: branches of
    // disjoint types, or of disjoint constant values.
    void check_disjoint(const std::vector<json>& branches, const std::string& path) {
        for (size_t i = 0; i < branches.size(); ++i)
            for (size_t j = i + 1; j < branches.size(); ++j) {
                json a = resolve(branches[i]), b = resolve(branches[j]);
                auto values = [](const json& s) -> std::optional<json> {
                    if (!s.is_object()) return std::nullopt;
                    if (s.contains("const")) return json::array({s["const"]});
                    if (s.contains("enum")) return s["enum"];
                    return std::nullopt;
                };
                auto va = values(a), vb = values(b);
                if (va && vb) {
                    bool overlap = false;
                    for (const auto& x : *va)
                        for (const auto& y : *vb)
                            if (x == y) overlap = true;
                    if (!overlap) continue;
                } else if (!va && !vb) {
                    auto ta = value_types(a), tb = value_types(b);
                    bool overlap = false;
                    for (const auto& x : ta)
                        if (std::find(tb.begin(), tb.end(), x) != tb.end()) overlap = true;
                    if (!overlap) continue;
                }
                bad_input(
                    "'oneOf' at {}: branches {} and {} may match the same document; only "
                    "branches of different types or different constants are supported "
                    "(use anyOf if either may match)",
                    at(path), i, j);
            }
    }

    Element enum_grammar(const json& s, const std::vector<std::string>& types,
                         const std::string& path) {
        for (auto& [k, v] : s.items())
            if (k != "enum" && k != "const" && k != "type" && !in(kAnnotations, k))
                bad_input("'enum'/'const' together with '{}' at {} is not supported", k, at(path));
        json values = json::array();
        if (s.contains("enum")) {
            if (!s["enum"].is_array()) bad_input("'enum' at {} must be an array", at(path));
            values = s["enum"];
        }
        if (s.contains("const")) {
            json keep = json::array();
            if (!s.contains("enum")) keep.push_back(s["const"]);
            for (const auto& v : values)
                if (v == s["const"]) keep.push_back(v);
            values = keep;
        }
        std::vector<std::vector<Element>> alts;
        for (const auto& v : values) {
            if (s.contains("type") && !has_type(v, types)) continue;
            std::string text;
            try {
                text = v.dump();
            } catch (const std::exception&) {
                bad_input("'enum' at {}: a value is not valid UTF-8", at(path));
            }
            alts.push_back(b_.literal(text));
        }
        if (alts.empty()) return nothing();
        return b_.choice(std::move(alts));
    }

    static bool has_type(const json& v, const std::vector<std::string>& types) {
        for (const auto& t : types) {
            if ((t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) ||
                (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
                (t == "string" && v.is_string()) || (t == "number" && v.is_number()))
                return true;
            if (t == "integer" &&
                (v.is_number_integer() ||
                 (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())))
                return true;
        }
        return false;
    }

    Element type_grammar(const json& s, const std::string& t, const std::string& path) {
        if (t == "null") return b_.group(b_.literal("null"));
        if (t == "boolean") return b_.choice({b_.literal("true"), b_.literal("false")});
        if (t == "string") return string_grammar(s, path);
        if (t == "integer") return integer(s, path);
        if (t == "number") return number(s, path);
        if (t == "array") return array_grammar(s, path);
        return object_grammar(s, path);
    }

    int64_t count(const json& s, const char* k, int64_t dflt, const std::string& path) {
        if (!s.contains(k)) return dflt;
        const json& v = s[k];
        if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
            bad_input("'{}' at {} must be a non-negative integer", k, at(path));
        double d = v.get<double>();
        return d > 1e15 ? int64_t{1000000000000000} : static_cast<int64_t>(d);
    }

    Element string_grammar(const json& s, const std::string& path) {
        bool has_len = s.contains("minLength") || s.contains("maxLength");
        int64_t min = count(s, "minLength", 0, path), max = count(s, "maxLength", -1, path);
        Element q = b_.byte('"');
        if (s.contains("pattern") || s.contains("format")) {
            if (has_len)
                bad_input("'minLength'/'maxLength' together with '{}' at {} is not supported",
                          s.contains("pattern") ? "pattern" : "format", at(path));
            if (s.contains("pattern") && s.contains("format"))
                bad_input("'pattern' together with 'format' at {} is not supported", at(path));
            std::string where, p;
            if (s.contains("pattern")) {
                if (!s["pattern"].is_string())
                    bad_input("'pattern' at {} must be a string", at(path));
                p = s["pattern"].get<std::string>();
                where = "'pattern' at " + at(path);
            } else {
                if (!s["format"].is_string())
                    bad_input("'format' at {} must be a string", at(path));
                std::string f = s["format"].get<std::string>();
                auto fp = format_pattern(f);
                if (!fp)
                    bad_input(
                        "'format' \"{}\" at {} is not supported (supported: date-time, date, "
                        "time, uuid, email, ipv4)",
                        f, at(path));
                p = *fp;
                where = "'format' at " + at(path);
            }
            return b_.group({q, regex_grammar(b_, p, where), q});
        }
        if (max >= 0 && max < min) return nothing();
        if (max > kMaxCount || min > kMaxCount)
            bad_input("'maxLength'/'minLength' at {} above {} is not supported", at(path),
                      kMaxCount);
        std::vector<Element> seq{q};
        auto body = b_.repeat(string_char(), min, max);
        seq.insert(seq.end(), body.begin(), body.end());
        seq.push_back(q);
        return b_.group(std::move(seq));
    }

    std::optional<double> num(const json& s, const char* k, const std::string& path) {
        if (!s.contains(k)) return std::nullopt;
        if (!s[k].is_number()) {
            if (s[k].is_boolean()) return std::nullopt;  // draft 4 exclusive flags, read below
            bad_input("'{}' at {} must be a number", k, at(path));
        }
        double v = s[k].get<double>();
        if (!std::isfinite(v)) bad_input("'{}' at {} must be finite", k, at(path));
        return v;
    }

    static bool flag(const json& s, const char* k) {
        return s.contains(k) && s[k].is_boolean() && s[k].get<bool>();
    }

    int64_t to_int(double v, const char* k, const std::string& path) {
        if (std::fabs(v) > 9e18)
            bad_input("'{}' {} at {}: bounds outside the 64-bit integer range are not supported", k,
                      v, at(path));
        return static_cast<int64_t>(v);
    }

    Element integer(const json& s, const std::string& path) {
        std::optional<int64_t> lo, hi;
        auto tighten_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
        auto tighten_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
        if (auto m = num(s, "minimum", path)) {
            bool ex = flag(s, "exclusiveMinimum");
            tighten_lo(to_int(ex ? std::floor(*m) + 1 : std::ceil(*m), "minimum", path));
        }
        if (auto m = num(s, "exclusiveMinimum", path))
            tighten_lo(to_int(std::floor(*m) + 1, "exclusiveMinimum", path));
        if (auto m = num(s, "maximum", path)) {
            bool ex = flag(s, "exclusiveMaximum");
            tighten_hi(to_int(ex ? std::ceil(*m) - 1 : std::floor(*m), "maximum", path));
        }
        if (auto m = num(s, "exclusiveMaximum", path))
            tighten_hi(to_int(std::ceil(*m) - 1, "exclusiveMaximum", path));
        if (lo && hi && *lo > *hi) return nothing();
        return integer_grammar(b_, lo, hi);
    }

    Element number(const json& s, const std::string& path) {
        std::optional<Bound> lo, hi;
        auto whole = [&](double v, const char* k) {
            if (std::floor(v) != v)
                bad_input(
                    "'{}' {} at {}: a number's bounds must be whole numbers (an integer type "
                    "takes any bound)",
                    k, v, at(path));
            return to_int(v, k, path);
        };
        if (auto m = num(s, "minimum", path))
            lo = Bound{whole(*m, "minimum"), flag(s, "exclusiveMinimum")};
        if (auto m = num(s, "exclusiveMinimum", path)) {
            Bound e{whole(*m, "exclusiveMinimum"), true};
            if (!lo || e.value >= lo->value) lo = e;
        }
        if (auto m = num(s, "maximum", path))
            hi = Bound{whole(*m, "maximum"), flag(s, "exclusiveMaximum")};
        if (auto m = num(s, "exclusiveMaximum", path)) {
            Bound e{whole(*m, "exclusiveMaximum"), true};
            if (!hi || e.value <= hi->value) hi = e;
        }
        if (lo && hi &&
            (lo->value > hi->value || (lo->value == hi->value && (lo->exclusive || hi->exclusive))))
            return nothing();
        return number_grammar(b_, lo, hi);
    }

    Element array_grammar(const json& s, const std::string& path) {
        std::vector<json> prefix;
        json extra = true;
        if (s.contains("prefixItems")) {
            if (!s["prefixItems"].is_array())
                bad_input("'prefixItems' at {} must be an array", at(path));
            for (const auto& x : s["prefixItems"]) prefix.push_back(x);
            if (s.contains("items")) extra = s["items"];
        } else if (s.contains("items") && s["items"].is_array()) {
            for (const auto& x : s["items"]) prefix.push_back(x);
            if (s.contains("additionalItems")) extra = s["additionalItems"];
        } else if (s.contains("items")) {
            extra = s["items"];
        }
        int64_t k = static_cast<int64_t>(prefix.size());
        int64_t min = count(s, "minItems", 0, path), max = count(s, "maxItems", -1, path);
        bool extra_none = extra.is_boolean() && !extra.get<bool>();
        if (extra_none) max = max < 0 ? k : std::min(max, k);
        if (max >= 0 && max < min) return nothing();
        if (min > kMaxCount || (max > kMaxCount && max > std::max(min, k)))
            bad_input("'maxItems'/'minItems' at {} above {} is not supported", at(path), kMaxCount);
        std::vector<Element> items;
        for (int64_t i = 0; i < k; ++i)
            items.push_back(compile(prefix[i], path + "/prefixItems/" + std::to_string(i)));
        Element extra_e = extra_none ? nothing() : compile(extra, path + "/items");
        auto item = [&](int64_t i) { return i < k ? items[i] : extra_e; };
        auto sep = [&](int64_t i, Element e) {
            return i == 0 ? std::vector<Element>{e} : std::vector<Element>{b_.byte(','), e};
        };
        int64_t last = max >= 0 ? max : std::max(min, k);
        // tail: what may follow once `last` items are written.
        Element tail;
        if (max >= 0) {
            RuleId r = b_.new_rule();
            b_.add_alt(r, {});
            tail = GrammarBuilder::ref(r);
        } else if (last == 0) {
            tail = b_.optional(b_.group({extra_e, b_.star(b_.group({b_.byte(','), extra_e}))}));
        } else {
            tail = b_.star(b_.group({b_.byte(','), extra_e}));
        }
        for (int64_t i = last - 1; i >= 0; --i) {
            RuleId r = b_.new_rule();
            auto seq = sep(i, item(i));
            seq.push_back(tail);
            b_.add_alt(r, std::move(seq));
            if (i >= min) b_.add_alt(r, {});
            tail = GrammarBuilder::ref(r);
        }
        return b_.group({b_.byte('['), tail, b_.byte(']')});
    }

    // A key not among `names`, written without escapes (so it cannot spell a listed name).
    Element key_excluding(const std::vector<std::string>& names) {
        struct Node {
            std::map<uint32_t, size_t> kids;
            bool end = false;
        };
        std::vector<Node> trie(1);
        for (const auto& n : names) {
            size_t t = 0;
            for (size_t i = 0; i < n.size();) {
                unsigned char c = n[i];
                int len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
                uint32_t cp = len == 1 ? c : c & (0x7f >> len);
                for (int j = 1; j < len && i + j < n.size(); ++j)
                    cp = (cp << 6) | (n[i + j] & 0x3f);
                i += len;
                auto it = trie[t].kids.find(cp);
                if (it == trie[t].kids.end()) {
                    trie.push_back({});
                    it = trie[t].kids.emplace(cp, trie.size() - 1).first;
                }
                t = it->second;
            }
            trie[t].end = true;
        }
        CodeSet raw = subtract({{0x20, 0x10ffff}}, {{'"', '"'}, {'\\', '\\'}});
        Element q = b_.byte('"');
        Element free = b_.group({b_.star(json_char_class(b_, raw)), q});
        std::function<Element(size_t)> rule = [&](size_t t) -> Element {
            RuleId r = b_.new_rule();
            if (!trie[t].end) b_.add_alt(r, {q});
            CodeSet kids;
            for (auto [cp, u] : trie[t].kids) {
                auto seq = json_char(b_, cp);
                seq.push_back(rule(u));
                b_.add_alt(r, std::move(seq));
                kids.push_back({cp, cp});
            }
            CodeSet other = subtract(raw, kids);
            if (!other.empty()) b_.add_alt(r, {json_char_class(b_, other), free});
            return GrammarBuilder::ref(r);
        };
        return b_.group({q, rule(0)});
    }

    Element object_grammar(const json& s, const std::string& path) {
        struct Prop {
            std::string name;
            json schema;
            bool required;
        };
        std::vector<Prop> props;
        std::vector<std::string> required;
        if (s.contains("required")) {
            if (!s["required"].is_array()) bad_input("'required' at {} must be an array", at(path));
            for (const auto& r : s["required"]) {
                if (!r.is_string()) bad_input("'required' at {} must list strings", at(path));
                required.push_back(r.get<std::string>());
            }
        }
        auto is_req = [&](const std::string& n) {
            return std::find(required.begin(), required.end(), n) != required.end();
        };
        if (s.contains("properties")) {
            if (!s["properties"].is_object())
                bad_input("'properties' at {} must be an object", at(path));
            for (auto& [k, v] : s["properties"].items()) props.push_back({k, v, is_req(k)});
        }
        json additional = opt_.additional_properties_default ? json(true) : json(false);
        if (s.contains("additionalProperties")) additional = s["additionalProperties"];
        for (const auto& r : required) {
            bool listed = false;
            for (const auto& p : props) listed |= p.name == r;
            if (!listed) props.push_back({r, additional, true});
        }
        std::vector<std::string> names;
        for (const auto& p : props) names.push_back(p.name);
        bool allow_more = !(additional.is_boolean() && !additional.get<bool>());
        // first: nothing written yet (no comma); rest: after a property (comma first).
        Element first, rest;
        if (allow_more) {
            Element kv = b_.group({key_excluding(names), b_.byte(':'),
                                   compile(additional, path + "/additionalProperties")});
            Element more = b_.star(b_.group({b_.byte(','), kv}));
            first = b_.optional(b_.group({kv, more}));
            rest = more;
        } else {
            RuleId r = b_.new_rule();
            b_.add_alt(r, {});
            first = rest = GrammarBuilder::ref(r);
        }
        for (size_t i = props.size(); i-- > 0;) {
            const Prop& p = props[i];
            if (!p.required && p.schema.is_boolean() && !p.schema.get<bool>()) continue;
            auto lit = b_.literal(quote(p.name) + ":");
            lit.push_back(compile(p.schema, path + "/properties/" + p.name));
            Element kv = b_.group(std::move(lit));
            RuleId f = b_.new_rule(), r = b_.new_rule();
            b_.add_alt(f, {kv, rest});
            b_.add_alt(r, {b_.byte(','), kv, rest});
            if (!p.required) {
                b_.add_alt(f, {first});
                b_.add_alt(r, {rest});
            }
            first = GrammarBuilder::ref(f);
            rest = GrammarBuilder::ref(r);
        }
        return b_.group({b_.byte('{'), first, b_.byte('}')});
    }

    const json& root_;
    SchemaOptions opt_;
    GrammarBuilder own_;
    GrammarBuilder& b_;
    std::map<std::string, RuleId> refs_;
    std::optional<Element> char_, string_, value_, object_;
    int depth_ = 0;
    int merges_ = 0;
};

std::shared_ptr<const Grammar> cached(const std::string& key,
                                      const std::function<std::shared_ptr<const Grammar>()>& make) {
    return GrammarCache::shared().get("schema:" + key, make);
}

}  // namespace

std::shared_ptr<const Grammar> compile_json_schema(const json& schema,
                                                   const SchemaOptions& options) {
    std::string key;
    try {
        key = schema.dump();
    } catch (const std::exception&) {
        bad_input("the JSON schema holds a string that is not valid UTF-8");
    }
    key = (options.additional_properties_default ? "A1:" : "A0:") + key;
    return cached(key, [&] { return Compiler(schema, options).run(); });
}

Element add_json_schema(GrammarBuilder& builder, const json& schema, const SchemaOptions& options) {
    return Compiler(schema, options, builder).value();
}

std::shared_ptr<const Grammar> compile_json_schema_text(std::string_view text,
                                                        const SchemaOptions& options) {
    json schema;
    try {
        schema = json::parse(text);
    } catch (const std::exception& e) {
        bad_input("the JSON schema is not valid JSON: {}", e.what());
    }
    return compile_json_schema(schema, options);
}

std::shared_ptr<const Grammar> any_json_grammar(bool object_only) {
    return cached(object_only ? "json_object" : "json_value", [&] {
        json none;
        return Compiler(none, {}).any(object_only);
    });
}

}  // namespace myriad::grammar
