#include "tokenizer/tool_declarations_prompt.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tool_declarations_ts.h"
#include "util/log.h"

namespace myriad {

namespace {

// Past this depth a value is copied as it is: the template cannot take it anyway (its JSON
// conversion stops at 200 levels), and the recursion stays bounded.
constexpr int kMaxSortDepth = 256;

nlohmann::ordered_json sorted_at(const nlohmann::ordered_json& v, int depth) {
    if (depth > kMaxSortDepth) return v;
    if (v.is_array()) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& item : v) out.push_back(sorted_at(item, depth + 1));
        return out;
    }
    if (!v.is_object()) return v;
    std::vector<const std::string*> keys;
    for (const auto& [k, _] : v.items()) keys.push_back(&k);
    // std::string compares bytes as unsigned: UTF-8 byte order is code-point order.
    std::sort(keys.begin(), keys.end(), [](auto* a, auto* b) { return *a < *b; });
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const std::string* k : keys) out[*k] = sorted_at(v.at(*k), depth + 1);
    return out;
}

}  // namespace

nlohmann::ordered_json sort_keys_deep(const nlohmann::ordered_json& v) {
    return sorted_at(v, 0);
}

void add_tool_declaration_variables(nlohmann::ordered_json& variables) {
    variables["thinking"] = true;
    auto tools = variables.find("tools");
    if (tools == variables.end() || tools->is_null()) return;
    *tools = sort_keys_deep(*tools);
    if (!tools->is_array() || tools->empty()) return;
    std::string declarations;
    try {
        declarations = encode_tools_typescript(*tools);
    } catch (const ToolDeclarationError& e) {
        log::warn(
            "Failed to convert tools to TypeScript style: {} (the chat template shows the tools "
            "as JSON instead)",
            e.what());
        return;
    }
    variables[std::string(kToolsTsVariable)] = std::move(declarations);  // "" too, as in §1.3
}

}  // namespace myriad
