// Typed access to the fields of one JSON object (config.json, generation_config.json): each
// error is bad input naming the file and the field, e.g. "config.json: field vocab_size has type
// string, expected integer".
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace myriad {

class JsonFields {
  public:
    // `object` must outlive this. `prefix` is prepended to field names in messages
    // ("text_config." for a nested object). Throws bad input when `object` is not an object.
    JsonFields(const nlohmann::ordered_json& object, std::string source, std::string prefix = "");

    const std::string& source() const { return source_; }
    // The field's name as messages spell it: prefix + name.
    std::string field_name(std::string_view name) const;

    // The field, or nullptr when absent. A JSON null is returned as is.
    const nlohmann::ordered_json* find(std::string_view name) const;
    // Present and not null.
    bool has(std::string_view name) const;

    // Required fields: absent or null is "field X is missing".
    int64_t integer(std::string_view name) const;
    double number(std::string_view name) const;
    bool boolean(std::string_view name) const;
    std::string string(std::string_view name) const;

    // Optional fields: absent or null gives nullopt; a wrong type is still an error.
    std::optional<int64_t> opt_integer(std::string_view name) const;
    std::optional<double> opt_number(std::string_view name) const;
    std::optional<bool> opt_boolean(std::string_view name) const;
    std::optional<std::string> opt_string(std::string_view name) const;

    // A required integer that must be > 0 ("field X must be positive, got 0").
    int64_t positive_integer(std::string_view name) const;
    double positive_number(std::string_view name) const;

    // Throws bad input "<source>: field <prefix><name> <what>".
    [[noreturn]] void fail(std::string_view name, std::string_view what) const;

    // Conversions of one value, used for list elements too; `name` is the field in messages.
    int64_t as_integer(const nlohmann::ordered_json& v, std::string_view name) const;
    double as_number(const nlohmann::ordered_json& v, std::string_view name) const;

  private:
    const nlohmann::ordered_json& object_;
    std::string source_;
    std::string prefix_;
};

// The type of a JSON value as messages say it: object, array, string, boolean, integer, number,
// null.
std::string_view json_type_name(const nlohmann::ordered_json& v);

}  // namespace myriad
