// POST /v1/chat/completions: render, encode, submit n sequences, and turn each one's text into
// reasoning, content and tool calls through the model family's output parser — one code path for
// streaming (deltas) and non-streaming (the accumulated message).
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply chat_completions(ServerState& state, std::string_view body);

// The parsers for this server (flags, else from model_type).
std::string tool_parser_name(const ServerOptions& o);
std::string reasoning_parser_name(const ServerOptions& o);

}  // namespace myriad::api
