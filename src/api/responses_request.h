// OpenAI Responses API requests (POST /v1/responses) read into a chat request: `input` as a
// string or items (message, function_call, function_call_output, reasoning, custom_tool_call and
// its output), `instructions` as the system text, flat function tools, Codex's `custom` tools
// offered as a function taking {input: string}, tool_choice, parallel_tool_calls,
// max_output_tokens, reasoning.effort as the template's thinking switch. Other tool and item
// types are skipped with a warning, never refused.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "api/openai_request.h"

namespace myriad::api {

struct ResponsesRequest {
    ChatRequest chat;                     // messages: instructions + history + input
    nlohmann::ordered_json conversation;  // history + input, without instructions (stored)
    std::set<std::string> custom_tools;   // names of the `custom` tools
    std::string previous_response_id;
    std::string instructions;
    bool store = true;
    nlohmann::ordered_json text_format = {{"type", "text"}};  // text.format as asked (echoed)
};

// `lookup` gives the stored conversation of previous_response_id; nothing found is a 404.
ResponsesRequest parse_responses_request(
    std::string_view body,
    const std::function<std::optional<nlohmann::ordered_json>(const std::string&)>& lookup);

}  // namespace myriad::api
