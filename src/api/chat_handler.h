// POST /v1/chat/completions: the request parsed into the generation core, and its events
// rendered as a chat.completion (non-streaming) or chat.completion.chunk events (streaming).
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply chat_completions(ServerState& state, std::string_view body);

}  // namespace myriad::api
