// Structured output of a chat request: which grammar its output follows and when it starts.
//   tool_choice required / named: a tool-call section in the model's syntax, every call's
//     arguments held to its tool's schema (one call unless parallel_tool_calls);
//   else response_format json_object / json_schema (the Responses API's text.format and
//     Anthropic's output_config.format arrive as it): the JSON document;
//   else strict tools under tool_choice auto: free text until the model opens its call
//     section, then the section as above (strict tools' arguments to their schema, the others'
//     to any JSON object).
// With a reasoning parser the constraint starts when reasoning ends (</think>). A schema the
// grammar cannot enforce is a 400 naming the field and the keyword.
#pragma once

#include <memory>

#include "api/openai_request.h"
#include "api/output_parser.h"
#include "api/server_state.h"
#include "engine/sampling_params.h"

namespace myriad::api {

// Null when the request asks for no constraint. `in_think`: the prompt leaves reasoning open;
// `first_call_index`: the conversation's tool calls so far.
std::shared_ptr<const OutputConstraint> output_constraint(const ServerState& state,
                                                          const ChatRequest& r,
                                                          const ParserOptions& po, bool in_think,
                                                          int first_call_index);

// response_format alone (completions: no tools, no reasoning).
std::shared_ptr<const OutputConstraint> format_constraint(const ServerState& state,
                                                          const ResponseFormat& format);

}  // namespace myriad::api
