// How a model family writes tool calls. Every family frames its calls the same way — a section
// marker pair around calls of the shape <call begin> HEAD <separator> BODY <call end> — and
// differs in the marker spellings and in what HEAD and BODY hold (kimi_k2: the id, then the
// arguments; deepseek: a type or the name, then the name line and fenced arguments, or the
// arguments). The frame is walked by the output parser; a CallReader reads one call's parts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myriad::api {

enum class Marker : uint8_t {
    ThinkOpen,
    ThinkClose,
    SectionBegin,
    SectionEnd,
    CallBegin,
    CallSeparator,
    CallEnd,
};

struct MarkerSpelling {
    std::string_view text;
    Marker kind;
};

struct CallHeader {
    std::string id;  // empty: the parser generates one
    std::string name;
};

// What reading part of a call decided.
struct CallEvents {
    std::optional<CallHeader> header;  // set once, before any argument text
    std::string arguments;             // argument text to append
};

// Reads one tool call. A call that never yields a header is dropped (not a call).
class CallReader {
  public:
    virtual ~CallReader() = default;
    // The head (the text between call begin and the separator) is complete. False: not a call.
    virtual bool read_head(std::string_view head, CallEvents& out) = 0;
    // More body text (between the separator and the call end).
    virtual void read_body(std::string_view text, CallEvents& out) = 0;
    // The body ended: the call-end marker, a marker that cuts the call short, or end of output.
    virtual void end_body(CallEvents& out) = 0;
};

struct ToolCallSyntax {
    std::vector<MarkerSpelling> markers;  // the section and call markers, all spellings
    std::function<std::unique_ptr<CallReader>()> new_call;
    std::string_view section_begin;  // the spelling the model is prompted with
    // The output that starts a call of `name` (header included, up to its arguments); `index`
    // counts the calls of the conversation (kimi_k2 writes it into the id).
    std::function<std::string(std::string_view name, int index)> call_prefix;
    // What follows a call's arguments, and what closes the section: with call_prefix, the
    // spelling a constrained tool call is held to (api/tool_call_grammar.h).
    std::string_view call_suffix;
    std::string_view section_end;
};

// The syntax a --tool-call-parser name selects; nullptr for "" and unknown names.
const ToolCallSyntax* find_tool_call_syntax(std::string_view parser_name);

const ToolCallSyntax& kimi_k2_tool_call_syntax();
// deepseek_v3 and deepseek_v31 read both DeepSeek call formats (see deepseek_tool_syntax.cpp);
// they differ only in the call prefix they force.
const ToolCallSyntax& deepseek_v3_tool_call_syntax();
const ToolCallSyntax& deepseek_v31_tool_call_syntax();

}  // namespace myriad::api
