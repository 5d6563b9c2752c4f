// Output parsers: a model's decoded output (special tokens included, in chunks of any size) split
// into reasoning, content and tool calls, for one model family (reference.md §5). Streaming and
// non-streaming share one code path — non-streaming is feed(all) + finish() — and every chunking
// of a text gives the same result, which the streamed deltas add up to. Only a possible marker
// start, an unfinished UTF-8 character, and trailing white space of tool arguments are held back.
//
// Reasoning, decided from the rendered prompt and never guessed: when the prompt ends inside an
// open <think> the output starts as reasoning; a <think> the model writes opens reasoning (a
// second one inside reasoning is dropped); </think> closes it, and so does the start of a
// tool-call section. Otherwise text is content — an answer without tags is never blanked. A
// </think> with no reasoning open stays content text, as does everything with no reasoning
// parser. The reasoning parser names (kimi_k2, deepseek_r1, deepseek_v3) all mean this rule.
//
// Content that is only white space and comes right before <think> or a tool section (the
// newlines between parts) is dropped; white space anywhere else is kept.
//
// Tool calls (only with tools_enabled and a tool parser): text before the section is content;
// inside it, only calls count; after its end, text is dropped (as vLLM does) until another
// section begins. A call is emitted once its header is known (kimi_k2: at the argument marker,
// once its id reads `PREFIX:DIGITS`; deepseek: at the end of the name), then its arguments as
// fragments. Arguments are the model's text less surrounding white space (and DeepSeek-V3's
// ```json fence); JSON is not validated. A call whose header never completes is dropped; one
// whose head names no function (kimi_k2: an id not `PREFIX:DIGITS`, such as `call_3`) names the
// declared tool when exactly one is declared, else comes back as content text, markers and all
// (and a warning in the log). A DeepSeek call with an empty name is still dropped. A call cut short
// — the output ends (max_tokens) or another call or the section end comes before its call-end
// marker — is kept with the arguments it got (a streaming client already has them) and marked
// complete = false.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_call_id.h"

namespace myriad::api {

struct ToolCall {
    std::string id;  // kimi_k2: the model's id verbatim (functions.NAME:IDX); else generated
    std::string name;
    std::string arguments;
    bool complete = false;  // its call-end marker came
};

// A piece of one tool call: the first carries id, type ("function") and name; the later ones
// only argument text to append to the call at `index`.
struct ToolCallDelta {
    int index = 0;
    std::optional<std::string> id, type, name;
    std::string arguments;
};

struct OutputDelta {
    std::string reasoning, content;
    std::vector<ToolCallDelta> tool_calls;
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

struct ParsedOutput {
    std::optional<std::string> reasoning;  // set once reasoning opened (may stay "")
    std::optional<std::string> content;    // set once content text came (never "")
    std::vector<ToolCall> tool_calls;
};

struct ParserOptions {
    std::string tool_parser;              // "kimi_k2" | "deepseek_v3" | "deepseek_v31" | "" (none)
    std::string reasoning_parser;         // "kimi_k2" | "deepseek_r1" | "deepseek_v3" | "" (none)
    bool prompt_ends_in_think = false;    // the rendered prompt ends inside an open <think>
    bool tools_enabled = false;           // the request has tools and tool_choice is not none
    ToolCallIdSource tool_call_ids;       // for generated ids; empty: random_tool_call_ids()
    std::vector<std::string> tool_names;  // the request's declared tools (resolve nameless calls)
};

class OutputParser {
  public:
    virtual ~OutputParser() = default;
    // Decoded text with special tokens, cut anywhere (inside markers and characters too).
    virtual OutputDelta feed(std::string_view text) = 0;
    // End of generation (stop or max_tokens): flushes what was held back, ends an open call.
    virtual OutputDelta finish() = 0;
    // Everything so far.
    virtual const ParsedOutput& result() const = 0;
    // The output fed so far leaves reasoning open (a forced tool call must close it first).
    virtual bool in_reasoning() const = 0;
};

// Bad input (naming the parser and the known ones) for an unknown parser name.
std::unique_ptr<OutputParser> make_output_parser(const ParserOptions& options);
// Non-streaming: the whole output at once.
ParsedOutput parse_output(const ParserOptions& options, std::string_view text);

// Bad input naming `flag` when `name` is not a tool (or reasoning) parser; "" is valid (none).
void check_tool_parser_name(std::string_view name, std::string_view flag);
void check_reasoning_parser_name(std::string_view name, std::string_view flag);

// Whether the rendered prompt leaves the model inside reasoning: it ends, white space aside,
// with <think> (DeepSeek-R1 `<think>\n`, V3.1 and Kimi-K2.5 with thinking on).
bool prompt_ends_in_think(std::string_view rendered_prompt);

// The parsers of a model family (config.json model_type), before --tool-call-parser and
// --reasoning-parser override them. kimi_k2 and kimi_k25: kimi_k2 for both. deepseek_v3 (V3,
// R1 and V3.1 alike): deepseek_v3 tool calls, which read the V3.1 format too; deepseek_r1
// reasoning only when the prompt opened <think>, because V3 without thinking never writes the
// tags and a literal <think> in its answer is text. Anything else: no parsers.
ParserOptions default_parser_options(std::string_view model_type, bool prompt_ends_in_think,
                                     bool tools_enabled);

// The special-token strings the parsers need to see in the decoded text.
std::vector<std::string> parser_markers(const ParserOptions& options);

// The output that forces a tool call (tool_choice required or named): the section opening, and
// for a named function the call header up to its arguments; `index` numbers the call within the
// conversation (kimi_k2 writes it into the id `functions.NAME:INDEX`).
std::string forced_tool_call_prefix(std::string_view tool_parser, std::string_view function_name,
                                    int index);

}  // namespace myriad::api
