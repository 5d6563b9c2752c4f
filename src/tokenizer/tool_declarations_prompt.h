// What Kimi-K2.5's tokenizer does to a chat request before its template runs
// (../shared/docs/kimi-k25-tools.md §1.3), for any template that reads `tools_ts_str`:
// the tools are sorted by key at every depth (the template sees the sorted list too), their
// TypeScript-style declaration becomes `tools_ts_str`, and `thinking` defaults to true.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace myriad {

// The template variable that holds the declarations; a template that reads it gets them.
inline constexpr std::string_view kToolsTsVariable = "tools_ts_str";

// Adds to a template's variables (messages, tools, ...; chat_template_kwargs are applied
// after, so they win): `tools` replaced by its key-sorted copy; `tools_ts_str` when the sorted
// list is non-empty and encodes (on failure one warning line, and no `tools_ts_str`: the
// template then writes the sorted tools as JSON); `thinking` = true.
void add_tool_declaration_variables(nlohmann::ordered_json& variables);

// `v` with the keys of every object, at every depth, in ascending code-point order; array
// elements keep their order.
nlohmann::ordered_json sort_keys_deep(const nlohmann::ordered_json& v);

}  // namespace myriad
