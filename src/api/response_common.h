// Pieces shared by the chat and completions responses: ids, timestamps, usage and logprobs JSON,
// and the model-name check.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "api/generation.h"
#include "api/server_state.h"

namespace myriad::api {

// "<prefix>-<32 hex digits>", random.
std::string random_id(const char* prefix);
int64_t unix_now();
// 404 unless `model` is the served model name; an empty one (left out) becomes it.
void check_model(const ServerState& state, std::string& model);
// 400 when a request uses test_output without --enable-test-output.
void check_test_output(const ServerState& state, const GenerationFields& g);
nlohmann::ordered_json usage_json(const Usage& u);
// JSON with a space after each ':' and ',' (Python's json.dumps): how models write tool
// arguments, so arguments an API gives back as an object render as the model wrote them and the
// prefix cache still matches the next turn.
std::string spaced_json(const nlohmann::ordered_json& j);
// A token's text for logprobs (its bytes; invalid UTF-8 is replaced when serialized).
std::string token_text(const Tokenizer& tok, TokenId id);
// Chat's {"content": [{token, logprob, bytes, top_logprobs}]} entries for `lp`.
nlohmann::ordered_json chat_logprobs(const Tokenizer& tok, const std::vector<SampleResult>& lp);

}  // namespace myriad::api
