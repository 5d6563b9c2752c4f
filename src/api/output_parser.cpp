// The output parser: one state machine over the marker stream for every family — content,
// reasoning, tool-call section, after the section — with the family's CallReader reading the
// calls inside the section.
#include "api/output_parser.h"

#include <utility>

#include "api/argument_text.h"
#include "api/marker_lexer.h"
#include "api/tool_call_syntax.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace {

class SectionedOutputParser final : public OutputParser {
  public:
    SectionedOutputParser(const ToolCallSyntax* syntax, bool reasoning, bool starts_in_reasoning,
                          ToolCallIdSource ids, std::vector<std::string> tool_names)
        : syntax_(syntax),
          lexer_(spellings(syntax, reasoning)),
          ids_(std::move(ids)),
          tool_names_(std::move(tool_names)) {
        if (reasoning && starts_in_reasoning) {
            mode_ = Mode::Reasoning;
            result_.reasoning.emplace();
        }
    }

    OutputDelta feed(std::string_view text) override {
        MYRIAD_CHECK(!finished_, "output parser fed after finish()");
        pieces_.clear();
        lexer_.feed(text, pieces_);
        for (const MarkerLexer::Piece& p : pieces_) handle(p);
        return std::exchange(delta_, {});
    }

    OutputDelta finish() override {
        if (finished_) return {};
        finished_ = true;
        pieces_.clear();
        lexer_.finish(pieces_);
        for (const MarkerLexer::Piece& p : pieces_) handle(p);
        end_call(/*complete=*/false);
        append_content(held_space_);  // an answer of only white space is still the answer
        held_space_.clear();
        return std::exchange(delta_, {});
    }

    const ParsedOutput& result() const override { return result_; }
    bool in_reasoning() const override { return mode_ == Mode::Reasoning; }

  private:
    enum class Mode { Content, Reasoning, Section, AfterSection };
    // Inside the section: where in a call; Text: a call whose head did not parse, kept as
    // content.
    enum class Call { None, Head, Body, Text };

    // The lexer's markers (think tags with reasoning, the family's with tool calls); kinds_
    // gives each one's meaning by index.
    std::vector<std::string> spellings(const ToolCallSyntax* syntax, bool reasoning) {
        std::vector<std::string> out;
        auto add = [&](std::string_view text, Marker kind) {
            out.emplace_back(text);
            kinds_.push_back(kind);
        };
        if (reasoning) {
            add("<think>", Marker::ThinkOpen);
            add("</think>", Marker::ThinkClose);
        }
        if (syntax)
            for (const MarkerSpelling& m : syntax->markers) add(m.text, m.kind);
        return out;
    }

    void handle(const MarkerLexer::Piece& p) {
        spelling_ = p.marker >= 0 ? std::string_view(p.text) : std::string_view();
        if (p.marker < 0 || !on_marker(kinds_[p.marker])) on_text(p.text);
    }

    // False: the marker means nothing here and counts as text.
    bool on_marker(Marker kind) {
        switch (mode_) {
            case Mode::Content:
                if (kind == Marker::ThinkOpen) {
                    mode_ = Mode::Reasoning;
                    if (!result_.reasoning) result_.reasoning.emplace();
                    held_space_.clear();
                    return true;
                }
                if (kind == Marker::SectionBegin) {
                    mode_ = Mode::Section;
                    held_space_.clear();
                    return true;
                }
                return false;
            case Mode::Reasoning:
                if (kind == Marker::ThinkClose) {
                    mode_ = Mode::Content;
                    content_started_ = false;
                }
                if (kind == Marker::SectionBegin) mode_ = Mode::Section;
                return kind == Marker::ThinkOpen || kind == Marker::ThinkClose ||
                       kind == Marker::SectionBegin;
            case Mode::Section:
                return on_section_marker(kind);
            case Mode::AfterSection:
                if (kind == Marker::SectionBegin) mode_ = Mode::Section;
                return true;
        }
        return false;
    }

    bool on_section_marker(Marker kind) {
        switch (kind) {
            case Marker::CallBegin:
                end_call(/*complete=*/false);
                call_ = Call::Head;
                head_.clear();
                call_begin_ = spelling_;
                reader_ = syntax_->new_call();
                return true;
            case Marker::CallSeparator: {
                if (call_ != Call::Head) return false;
                CallEvents ev;
                if (reader_->read_head(head_, ev) || sole_tool_header(ev)) {
                    call_ = Call::Body;
                    apply(ev);
                } else {
                    // Nothing the model wrote is lost: the call comes back as text.
                    log::warn("tool call '{}' does not name a declared tool; returned as content",
                              trim_space(head_));
                    call_ = Call::Text;
                    append_content(call_begin_ + head_ + std::string(spelling_));
                }
                return true;
            }
            case Marker::CallEnd:
                if (call_ == Call::Text) append_content(spelling_);
                end_call(/*complete=*/true);
                return true;
            case Marker::SectionEnd:
                end_call(/*complete=*/false);
                mode_ = Mode::AfterSection;
                return true;
            default:
                return false;
        }
    }

    void on_text(std::string_view text) {
        if (text.empty()) return;
        switch (mode_) {
            case Mode::Content:
                content_text(text);
                break;
            case Mode::Reasoning:
                *result_.reasoning += text;
                delta_.reasoning += text;
                break;
            case Mode::Section:
                if (call_ == Call::Head) {
                    head_ += text;
                } else if (call_ == Call::Body) {
                    CallEvents ev;
                    reader_->read_body(text, ev);
                    apply(ev);
                } else if (call_ == Call::Text) {
                    append_content(text);
                }
                break;  // text between calls is dropped
            case Mode::AfterSection:
                break;
        }
    }

    // Content white space is held until other text follows: a run of only white space before
    // <think> or a tool section separates parts and is dropped.
    void content_text(std::string_view text) {
        if (!content_started_) {
            size_t k = 0;
            while (k < text.size() && is_space(text[k])) ++k;
            held_space_.append(text.substr(0, k));
            if (k == text.size()) return;
            text.remove_prefix(k);
            content_started_ = true;
            append_content(held_space_);
            held_space_.clear();
        }
        append_content(text);
    }

    void append_content(std::string_view text) {
        if (text.empty()) return;
        if (!result_.content) result_.content.emplace();
        *result_.content += text;
        delta_.content += text;
    }

    // Ends the current call: a call in its body keeps what it has; one still in its head is
    // dropped.
    void end_call(bool complete) {
        if (call_ == Call::Body) {
            CallEvents ev;
            reader_->end_body(ev);
            apply(ev);
            if (call_emitted_) result_.tool_calls.back().complete = complete;
        }
        call_ = Call::None;
        call_emitted_ = false;
        reader_.reset();
    }

    // A head that is only an id without a function name (Kimi-K2.6 writes `call_3` in
    // multi-turn use) names the one declared tool when there is exactly one.
    bool sole_tool_header(CallEvents& ev) const {
        const std::string_view id = trim_space(head_);
        if (tool_names_.size() != 1 || id.empty()) return false;
        for (char c : id)
            if (c == '<' || c == '>' || is_space(c)) return false;
        ev.header = CallHeader{std::string(id), tool_names_[0]};
        return true;
    }

    void apply(CallEvents& ev) {
        if (ev.header && !call_emitted_) {
            call_emitted_ = true;
            if (ev.header->id.empty()) {
                if (!ids_) ids_ = random_tool_call_ids();
                ev.header->id = ids_();
            }
            ToolCallDelta d;
            d.index = static_cast<int>(result_.tool_calls.size());
            d.id = ev.header->id;
            d.type = "function";
            d.name = ev.header->name;
            delta_.tool_calls.push_back(std::move(d));
            ToolCall call;
            call.id = std::move(ev.header->id);
            call.name = std::move(ev.header->name);
            result_.tool_calls.push_back(std::move(call));
        }
        if (ev.arguments.empty()) return;
        MYRIAD_CHECK(call_emitted_, "tool-call arguments before the call's header");
        int index = static_cast<int>(result_.tool_calls.size()) - 1;
        result_.tool_calls.back().arguments += ev.arguments;
        if (delta_.tool_calls.empty() || delta_.tool_calls.back().index != index) {
            delta_.tool_calls.emplace_back();
            delta_.tool_calls.back().index = index;
        }
        delta_.tool_calls.back().arguments += ev.arguments;
    }

    const ToolCallSyntax* syntax_;  // nullptr: no tool calls parsed
    std::vector<Marker> kinds_;
    MarkerLexer lexer_;
    ToolCallIdSource ids_;
    std::vector<std::string> tool_names_;  // the request's declared tools

    Mode mode_ = Mode::Content;
    Call call_ = Call::None;
    std::string head_;
    std::string call_begin_;     // the current call's begin marker as written
    std::string_view spelling_;  // the marker being handled
    std::unique_ptr<CallReader> reader_;
    bool content_started_ = false;  // content other than white space came (since </think>)
    std::string held_space_;
    bool call_emitted_ = false;  // the current call's header went out
    bool finished_ = false;

    std::vector<MarkerLexer::Piece> pieces_;
    OutputDelta delta_;
    ParsedOutput result_;
};

}  // namespace

std::unique_ptr<OutputParser> make_output_parser(const ParserOptions& options) {
    check_tool_parser_name(options.tool_parser, "tool_parser");
    check_reasoning_parser_name(options.reasoning_parser, "reasoning_parser");
    const ToolCallSyntax* syntax =
        options.tools_enabled ? find_tool_call_syntax(options.tool_parser) : nullptr;
    return std::make_unique<SectionedOutputParser>(syntax, !options.reasoning_parser.empty(),
                                                   options.prompt_ends_in_think,
                                                   options.tool_call_ids, options.tool_names);
}

ParsedOutput parse_output(const ParserOptions& options, std::string_view text) {
    std::unique_ptr<OutputParser> parser = make_output_parser(options);
    parser->feed(text);
    parser->finish();
    return parser->result();
}

}  // namespace myriad::api
