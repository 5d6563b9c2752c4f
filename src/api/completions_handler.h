// POST /v1/completions: prompts as text, text lists or token ids; n per prompt; echo; logprobs in
// the legacy shape; streaming or not.
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply completions(ServerState& state, std::string_view body);

}  // namespace myriad::api
