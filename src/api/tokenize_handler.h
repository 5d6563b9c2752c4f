// POST /tokenize and /detokenize in vLLM's shapes:
//   {"prompt": str, "add_special_tokens": bool} or {"messages": [...], "add_generation_prompt"}
//     -> {"count", "max_model_len", "tokens": [...], "token_strs": null}
//   {"tokens": [...]} -> {"prompt": str}
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply tokenize(ServerState& state, std::string_view body);
Reply detokenize(ServerState& state, std::string_view body);

}  // namespace myriad::api
