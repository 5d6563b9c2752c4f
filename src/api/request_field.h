// A request body's field as the APIs read it: absent and JSON null both mean "not set" (OpenAI and
// Anthropic clients send null for unset optional fields).
#pragma once

#include <nlohmann/json.hpp>

namespace myriad::api {

// The field's value, or nullptr when it is absent or null.
inline const nlohmann::ordered_json* request_field(const nlohmann::ordered_json& object,
                                                   const char* name) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
}

}  // namespace myriad::api
