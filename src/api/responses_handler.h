// POST /v1/responses (OpenAI Responses API) over the generation core: output items (reasoning,
// message, function_call, custom_tool_call) built from the same events whether streamed (the
// response.* event sequence, each with its sequence_number; one item open at a time) or not;
// the reply stored for previous_response_id unless `store: false`.
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply responses(ServerState& state, std::string_view body);

}  // namespace myriad::api
