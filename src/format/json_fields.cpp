#include "format/json_fields.h"

#include <cmath>

#include "util/error.h"

namespace myriad {

std::string_view json_type_name(const nlohmann::ordered_json& v) {
    switch (v.type()) {
        case nlohmann::ordered_json::value_t::null:
            return "null";
        case nlohmann::ordered_json::value_t::object:
            return "object";
        case nlohmann::ordered_json::value_t::array:
            return "array";
        case nlohmann::ordered_json::value_t::string:
            return "string";
        case nlohmann::ordered_json::value_t::boolean:
            return "boolean";
        case nlohmann::ordered_json::value_t::number_integer:
        case nlohmann::ordered_json::value_t::number_unsigned:
            return "integer";
        case nlohmann::ordered_json::value_t::number_float:
            return "number";
        default:
            return "binary";
    }
}

JsonFields::JsonFields(const nlohmann::ordered_json& object, std::string source, std::string prefix)
    : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!object_.is_object()) {
        if (prefix_.empty())
            bad_input("{}: has type {}, expected a JSON object", source_, json_type_name(object_));
        std::string name = prefix_.ends_with('.') ? prefix_.substr(0, prefix_.size() - 1) : prefix_;
        bad_input("{}: field {} has type {}, expected object", source_, name,
                  json_type_name(object_));
    }
}

std::string JsonFields::field_name(std::string_view name) const {
    return prefix_ + std::string(name);
}

const nlohmann::ordered_json* JsonFields::find(std::string_view name) const {
    auto it = object_.find(name);
    return it == object_.end() ? nullptr : &*it;
}

bool JsonFields::has(std::string_view name) const {
    const auto* v = find(name);
    return v != nullptr && !v->is_null();
}

void JsonFields::fail(std::string_view name, std::string_view what) const {
    bad_input("{}: field {}{} {}", source_, prefix_, name, what);
}

int64_t JsonFields::as_integer(const nlohmann::ordered_json& v, std::string_view name) const {
    if (v.is_number_unsigned()) {
        auto u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(INT64_MAX)) fail(name, fmt::format("is out of range: {}", u));
        return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    // 4096.0 is an integer written as a float; 2.5 is not.
    if (v.is_number_float()) {
        double d = v.get<double>();
        if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15)
            return static_cast<int64_t>(d);
        fail(name, fmt::format("is {}, expected an integer", d));
    }
    fail(name, fmt::format("has type {}, expected integer", json_type_name(v)));
}

double JsonFields::as_number(const nlohmann::ordered_json& v, std::string_view name) const {
    if (!v.is_number()) fail(name, fmt::format("has type {}, expected number", json_type_name(v)));
    return v.get<double>();
}

std::optional<int64_t> JsonFields::opt_integer(std::string_view name) const {
    const auto* v = find(name);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return as_integer(*v, name);
}

std::optional<double> JsonFields::opt_number(std::string_view name) const {
    const auto* v = find(name);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return as_number(*v, name);
}

std::optional<bool> JsonFields::opt_boolean(std::string_view name) const {
    const auto* v = find(name);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_boolean())
        fail(name, fmt::format("has type {}, expected boolean", json_type_name(*v)));
    return v->get<bool>();
}

std::optional<std::string> JsonFields::opt_string(std::string_view name) const {
    const auto* v = find(name);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_string())
        fail(name, fmt::format("has type {}, expected string", json_type_name(*v)));
    return v->get<std::string>();
}

int64_t JsonFields::integer(std::string_view name) const {
    if (auto v = opt_integer(name)) return *v;
    fail(name, "is missing");
}

double JsonFields::number(std::string_view name) const {
    if (auto v = opt_number(name)) return *v;
    fail(name, "is missing");
}

bool JsonFields::boolean(std::string_view name) const {
    if (auto v = opt_boolean(name)) return *v;
    fail(name, "is missing");
}

std::string JsonFields::string(std::string_view name) const {
    if (auto v = opt_string(name)) return *v;
    fail(name, "is missing");
}

int64_t JsonFields::positive_integer(std::string_view name) const {
    int64_t v = integer(name);
    if (v <= 0) fail(name, fmt::format("must be positive, got {}", v));
    return v;
}

double JsonFields::positive_number(std::string_view name) const {
    double v = number(name);
    if (!(v > 0.0) || !std::isfinite(v)) fail(name, fmt::format("must be positive, got {}", v));
    return v;
}

}  // namespace myriad
