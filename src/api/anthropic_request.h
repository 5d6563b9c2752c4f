// Anthropic Messages requests (POST /v1/messages, /v1/messages/count_tokens) read into a chat
// request the prompt renderer and the generation core take: system text or blocks; content
// blocks text, tool_use, tool_result (string or text blocks, is_error), thinking (the turn's
// reasoning); tools with input_schema as functions; tool_choice auto/any/tool/none;
// `thinking` as the template's thinking switch; stop_sequences. Images and documents are a 400
// naming the block (the models served read text only); server tools are skipped with a warning.
#pragma once

#include <string_view>

#include "api/openai_request.h"

namespace myriad::api {

// `count_only`: count_tokens's body (max_tokens not required).
ChatRequest parse_anthropic_request(std::string_view body, bool count_only);

// Claude Code's per-request attribution line ("x-anthropic-billing-header: ..."), which would
// change the prompt's first tokens every turn and so defeat the prefix cache.
bool is_billing_header_block(std::string_view text);

}  // namespace myriad::api
