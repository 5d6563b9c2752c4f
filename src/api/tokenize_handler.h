// POST /tokenize and /detokenize in vLLM's shapes:
//   {"prompt": str, "add_special_tokens": bool} or {"messages": [...], "add_generation_prompt"}
//     -> {"count", "max_model_len", "tokens": [...], "token_strs": null}
//   {"tokens": [...]} -> {"prompt": str}
// and GET /tokenizer_info as vLLM serves it (what lm-eval's tokenizer_backend=remote reads): the
// special tokens' text, the chat template, model_max_length and vocab_size.
#pragma once

#include <string_view>

#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

Reply tokenize(ServerState& state, std::string_view body);
Reply detokenize(ServerState& state, std::string_view body);
Reply tokenizer_info(ServerState& state, std::string_view body);

}  // namespace myriad::api
