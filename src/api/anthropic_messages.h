// POST /v1/messages and /v1/messages/count_tokens (Anthropic Messages API) over the generation
// core: the reply's content blocks (thinking, text, tool_use) built from the same events whether
// streamed (message_start, content_block_start/delta/stop, message_delta, message_stop, ping;
// one block open at a time) or not; stop_reason end_turn/max_tokens/stop_sequence/tool_use;
// usage with input_tokens (the uncached part), cache_read_input_tokens (prefix-cache hits) and
// output_tokens. Errors come in Anthropic's shape {"type": "error", "error": {type, message}}.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply anthropic_messages(ServerState& state, std::string_view body);
Reply anthropic_count_tokens(ServerState& state, std::string_view body);

// {"type": "error", "error": {"type": ..., "message": ...}} for an HTTP status.
nlohmann::ordered_json anthropic_error_json(int status, const std::string& message);
// Whether `path` is one of this API's (its errors take Anthropic's shape).
bool is_anthropic_path(std::string_view path);

}  // namespace myriad::api
