// The generation core under every endpoint (chat, completions, Anthropic Messages, Responses):
// an endpoint parses its request into a Prepared (prompt ids and sampling per sequence, the
// output parser of each), and a Renderer turns the one stream of ChoiceEvents — reasoning,
// content and tool-call deltas, tokens and logprobs, the finish — into its wire format. The same
// renderer answers streaming (events written as they come) and non-streaming (the body written
// at the end); run() drives both, handles the client leaving and engine errors, and reports
// usage.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/generation.h"
#include "api/openai_request.h"
#include "api/output_parser.h"
#include "api/reply.h"
#include "api/server_state.h"

namespace myriad::api {

// One step of one choice.
struct ChoiceEvent {
    size_t choice = 0;
    OutputDelta delta;  // parsed text; without a parser all of it is content
    std::vector<TokenId> tokens;
    std::vector<SampleResult> logprobs;
    std::vector<SampleResult> prompt_logprobs;  // once, when asked: prompt tokens 1, 2, ...
    bool finished = false;
    const char* finish_reason = nullptr;   // set when finished: "stop", "length", "abort"
    std::string stop_string;               // the stop string that ended it, if one did
    const ParsedOutput* parsed = nullptr;  // when finished and parsed: everything it produced
    int64_t cached_tokens = 0;             // its prompt tokens found in the prefix cache
    Usage usage;                           // the request's so far (continuous_usage_stats)
};

// What an endpoint's parser hands the core.
struct Prepared {
    std::vector<SequenceSpec> specs;
    std::vector<std::optional<ParserOptions>> parsers;  // per sequence; nullopt: raw text
    std::vector<bool> counts_prompt;  // per sequence: the first of its prompt (usage counts it)
    int64_t prompt_tokens = 0;        // all prompts
    bool parser_markers = false;      // keep the parsers' special tokens in the text
    // tool_choice required or named: an output that ends with no tool call is an error the
    // client sees, not an empty reply (the grammar makes a call certain unless the output is
    // cut short or the test facility's forced text holds none).
    bool require_tool_call = false;
};

class Renderer {
  public:
    virtual ~Renderer() = default;
    // `stream` is fixed for the renderer's life: when set, each call writes its events; when
    // not, only finish() writes (the whole body).
    virtual bool start(const StreamWriter& w) = 0;
    virtual bool event(ChoiceEvent& e, const StreamWriter& w) = 0;
    virtual bool finish(const Usage& usage, const StreamWriter& w) = 0;
    // A streaming generation failed after the response began.
    virtual void error(const std::string& message, const StreamWriter& w) = 0;
    virtual std::string content_type() const { return "application/json"; }
};

// Submits the sequences (429 when full, 400 when the engine refuses) and answers: with
// `stream` an event stream, else the body (500 on an engine error, 499 when the client left).
Reply run_generation(ServerState& state, Prepared prepared, const GenerationFields& g,
                     std::shared_ptr<Renderer> renderer, bool stream);

// The chat request prepared: rendered, encoded, sampling with its output constraint (and the
// test facility's forced test_output), one sequence per choice with its own seed and parser. A
// left-out model becomes the served one.
Prepared prepare_chat(ServerState& state, ChatRequest& r);
// The rendered prompt's tokens (count_tokens).
std::vector<TokenId> chat_prompt_ids(const ServerState& state, const ChatRequest& r);

// The parsers for this server (flags, else from model_type).
ParserOptions parser_options(const ServerOptions& o, bool in_think, bool tools_enabled);
std::string tool_parser_name(const ServerOptions& o);
std::string reasoning_parser_name(const ServerOptions& o);

}  // namespace myriad::api
