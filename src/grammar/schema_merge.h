// allOf as one schema: the branches' keywords merged (types intersected, properties and
// required united, bounds tightened, enums intersected); a pair it cannot merge is an error.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace myriad::grammar {

// `resolve` turns a {"$ref": ...} schema into its target (other schemas unchanged).
nlohmann::ordered_json merge_schemas(
    const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, const std::string& where,
    const std::function<nlohmann::ordered_json(const nlohmann::ordered_json&)>& resolve);

}  // namespace myriad::grammar
