// Keyword by keyword; where both sides carry a keyword the merge keeps what both allow.
#include "grammar/schema_merge.h"

#include <algorithm>

#include "util/error.h"

namespace myriad::grammar {
namespace {

using json = nlohmann::ordered_json;

bool is_annotation(const std::string& k) {
    static const char* names[] = {"title", "description", "default",    "examples", "$schema",
                                  "$id",   "$comment",    "deprecated", "readOnly", "writeOnly",
                                  "$defs", "definitions", "nullable",   "$anchor"};
    return std::find(std::begin(names), std::end(names), k) != std::end(names);
}

std::vector<std::string> types_of(const json& t) {
    if (t.is_string()) return {t.get<std::string>()};
    std::vector<std::string> out;
    if (t.is_array())
        for (const auto& x : t)
            if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
}

json intersect_types(const json& a, const json& b) {
    json out = json::array();
    auto tb = types_of(b);
    for (const auto& t : types_of(a)) {
        for (const auto& u : tb) {
            std::string m = t == u                              ? t
                            : (t == "integer" && u == "number") ? "integer"
                            : (t == "number" && u == "integer") ? "integer"
                                                                : "";
            if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
        }
    }
    return out;
}

json both(const json& x, const json& y) {
    if (x.is_boolean() && x.get<bool>()) return y;
    if (y.is_boolean() && y.get<bool>()) return x;
    return json{{"allOf", json::array({x, y})}};
}

}  // namespace

json merge_schemas(const json& a0, const json& b0, const std::string& where,
                   const std::function<json(const json&)>& resolve) {
    json a = resolve(a0), b = resolve(b0);
    if (a.is_boolean()) return a.get<bool>() ? b : a;
    if (b.is_boolean()) return b.get<bool>() ? a : b;
    if (!a.is_object() || !b.is_object())
        bad_input("allOf at {}: every branch must be a schema (an object or a boolean)", where);
    json out = a;
    for (const char* k : {"const"})
        for (json* s : {&out, &b})
            if (s->contains(k)) {
                json e = json::array({(*s)[k]});
                if (s->contains("enum")) {
                    json keep = json::array();
                    for (const auto& v : (*s)["enum"])
                        if (v == e[0]) keep.push_back(v);
                    e = keep;
                }
                (*s)["enum"] = e;
                s->erase(k);
            }
    // Properties first: a property one side lists and the other does not meets the other's
    // additionalProperties.
    if (a.contains("properties") || b.contains("properties")) {
        json pa = a.value("properties", json::object()), pb = b.value("properties", json::object());
        json add_a = a.value("additionalProperties", json(true));
        json add_b = b.value("additionalProperties", json(true));
        json props = json::object();
        for (auto [side, other, other_add] : {std::tuple{&pa, &pb, &add_b}, {&pb, &pa, &add_a}})
            for (auto& [k, v] : side->items()) {
                if (props.contains(k)) continue;
                json x = pa.contains(k) ? pa[k] : add_a;
                json y = pb.contains(k) ? pb[k] : add_b;
                (void)other, (void)other_add, (void)v;
                props[k] = both(x, y);
            }
        out["properties"] = props;
    }
    for (auto& [k, v] : b.items()) {
        if (k == "properties" || is_annotation(k)) continue;
        if (!out.contains(k)) {
            out[k] = v;
            continue;
        }
        json& o = out[k];
        if (o == v) continue;
        if (k == "type") {
            o = intersect_types(o, v);
        } else if (k == "required") {
            for (const auto& r : v)
                if (std::find(o.begin(), o.end(), r) == o.end()) o.push_back(r);
        } else if (k == "minimum" || k == "minLength" || k == "minItems" ||
                   (k == "exclusiveMinimum" && v.is_number())) {
            if (!o.is_number() || !v.is_number())
                bad_input("allOf at {}: '{}' must be a number", where, k);
            if (v.get<double>() > o.get<double>()) o = v;
        } else if (k == "maximum" || k == "maxLength" || k == "maxItems" ||
                   (k == "exclusiveMaximum" && v.is_number())) {
            if (!o.is_number() || !v.is_number())
                bad_input("allOf at {}: '{}' must be a number", where, k);
            if (v.get<double>() < o.get<double>()) o = v;
        } else if (k == "enum") {
            json keep = json::array();
            for (const auto& x : o)
                if (std::find(v.begin(), v.end(), x) != v.end()) keep.push_back(x);
            o = keep;
        } else if (k == "items" || k == "additionalProperties" || k == "additionalItems") {
            if (o.is_array() || v.is_array())
                bad_input("allOf at {}: merging two tuple forms of '{}' is not supported", where,
                          k);
            o = both(o, v);
        } else if (k == "allOf") {
            for (const auto& x : v) o.push_back(x);
        } else {
            bad_input("allOf at {}: two different '{}' cannot be merged into one schema", where, k);
        }
    }
    return out;
}

}  // namespace myriad::grammar
