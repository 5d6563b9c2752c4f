// Server-sent events as OpenAI streams them: `data: <json>\n\n` per event, `data: [DONE]` last.
#pragma once

#include <string>
#include <string_view>

namespace myriad::api {

std::string sse_event(std::string_view json);
// `event: <type>` + `data: <json>`: Anthropic's and the Responses API's framing.
std::string sse_named_event(std::string_view type, std::string_view json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace myriad::api
