// The requests of the OpenAI API parsed and checked into our types. A field of the wrong type or
// out of range is an ApiError 400 naming the field; unknown fields are ignored.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace myriad::api {

// Structured output asked for: chat's response_format, the Responses API's text.format,
// Anthropic's output_config.format, completions' response_format.
struct ResponseFormat {
    enum class Type : uint8_t { Text, JsonObject, JsonSchema };
    Type type = Type::Text;
    nlohmann::ordered_json schema;  // JsonSchema: the schema (null: any JSON value)
    std::string field;              // where the schema came from, for errors (e.g. "text.format")
};

// Sampling and output fields shared by chat and completions.
struct GenerationFields {
    std::string model;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // stream_options.continuous_usage_stats with include_usage: the usage so far in every chunk
    // (vLLM's).
    bool continuous_usage = false;
    std::optional<int64_t> max_tokens;  // max_completion_tokens or max_tokens (0: completions'
                                        // echo of the prompt alone)
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
    double presence_penalty = 0, frequency_penalty = 0;
    std::optional<uint64_t> seed;
    int64_t n = 1;
    std::vector<std::string> stop;
    std::vector<TokenId> stop_token_ids;
    std::vector<std::pair<TokenId, float>> logit_bias;
    int64_t top_logprobs = -1;  // -1: no logprobs
    int64_t min_tokens = 0;
    bool ignore_eos = false;
    bool skip_special_tokens = true;
    bool include_stop_str_in_output = false;
    std::optional<std::string> test_output;  // test facility (serve --enable-test-output)
    ResponseFormat response_format;
};

enum class ToolChoice { None, Auto, Required, Named };

struct ChatRequest : GenerationFields {
    nlohmann::ordered_json messages;  // checked: roles, content shapes, tool calls
    nlohmann::ordered_json tools;     // array or null
    ToolChoice tool_choice = ToolChoice::None;
    std::string tool_choice_name;  // for Named
    // Tools whose arguments must match their schema under tool_choice auto (strict: true;
    // required and named calls are always constrained). Kept apart from `tools`, which the
    // template renders as given.
    std::vector<std::string> strict_tools;
    bool parallel_tool_calls = true;
    nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
    bool add_generation_prompt = true;
    bool echo = false;
};

// A completions prompt: text, or token ids.
struct Prompt {
    std::optional<std::string> text;
    std::vector<TokenId> ids;
};

struct CompletionRequest : GenerationFields {
    std::vector<Prompt> prompts;
    // The prompt comes back before the completion; with logprobs, its tokens' logprobs too (the
    // first token's null), and max_tokens may be 0 (the prompt alone: what lm-eval's
    // loglikelihood requests need).
    bool echo = false;
};

// The sampling and output fields of a request body (chat: `logprobs` is a boolean with
// `top_logprobs`; else `logprobs` is the count). Other APIs whose fields share these names
// (Anthropic's, the Responses API's) read them here too.
void parse_generation(const nlohmann::ordered_json& o, GenerationFields& g, bool chat);

// A response_format-shaped object at `where`: {type: text | json_object | json_schema, ...}
// with the schema in `json_schema.schema` (OpenAI chat) or in `schema` (Responses text.format,
// Anthropic output_config.format); 400s name the field.
ResponseFormat parse_response_format(const nlohmann::ordered_json& f, const std::string& where);

// Parses the body (JSON nested at most 64 deep).
nlohmann::ordered_json parse_body(std::string_view body);
ChatRequest parse_chat_request(std::string_view body);
CompletionRequest parse_completion_request(std::string_view body);

}  // namespace myriad::api
