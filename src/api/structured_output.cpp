#include "api/structured_output.h"

#include "api/api_error.h"
#include "api/generation_core.h"
#include "api/tool_call_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/vocabulary.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace {

// The id `text` is as one token, -1 when it is more than one.
TokenId single_token(const Tokenizer& tok, std::string_view text) {
    const std::vector<TokenId> ids = tok.encode(text, false);
    return ids.size() == 1 ? ids[0] : -1;
}

std::shared_ptr<const grammar::Grammar> format_grammar(const ResponseFormat& f) {
    if (f.type == ResponseFormat::Type::JsonObject) return grammar::any_json_grammar(true);
    if (f.schema.is_null()) return grammar::any_json_grammar(false);
    try {
        return grammar::compile_json_schema(f.schema);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::BadInput) throw;
        fail(400, f.field, "'{}' cannot be enforced: {}", f.field, e.what());
    }
}

// The added tokens the model writes as syntax: the tool-call markers of the server's parser and
// the reasoning tags, each where it is one token.
std::vector<TokenId> marker_ids(const ServerState& state) {
    const Tokenizer& tok = *state.model().tokenizer;
    std::vector<std::string_view> texts = {"<think>", "</think>"};
    if (const ToolCallSyntax* s = find_tool_call_syntax(tool_parser_name(state.options())))
        for (const MarkerSpelling& m : s->markers) texts.push_back(m.text);
    std::vector<TokenId> ids;
    for (std::string_view t : texts)
        if (TokenId id = single_token(tok, t); id >= 0) ids.push_back(id);
    return ids;
}

std::shared_ptr<OutputConstraint> make(const ServerState& state,
                                       std::shared_ptr<const grammar::Grammar> g) {
    auto c = std::make_shared<OutputConstraint>();
    c->grammar = std::move(g);
    c->vocab = state.grammar_vocabulary(marker_ids(state));
    return c;
}

}  // namespace

std::shared_ptr<const OutputConstraint> format_constraint(const ServerState& state,
                                                          const ResponseFormat& format) {
    if (format.type == ResponseFormat::Type::Text) return nullptr;
    return make(state, format_grammar(format));
}

std::shared_ptr<const OutputConstraint> output_constraint(const ServerState& state,
                                                          const ChatRequest& r,
                                                          const ParserOptions& po, bool in_think,
                                                          int first_call_index) {
    const Tokenizer& tok = *state.model().tokenizer;
    const ToolCallSyntax* syntax =
        po.tools_enabled ? find_tool_call_syntax(po.tool_parser) : nullptr;
    const bool forced_call =
        r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named;
    std::shared_ptr<OutputConstraint> c;
    if (forced_call && syntax) {
        ToolCallGrammarSpec spec;
        spec.tools = r.tools;
        if (r.tool_choice == ToolChoice::Named) spec.names = {r.tool_choice_name};
        spec.first_index = first_call_index;
        spec.parallel = r.parallel_tool_calls;
        try {
            c = make(state, tool_call_grammar(*syntax, tok, marker_ids(state), spec));
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::BadInput) throw;
            fail(400, "tools", "{}", e.what());
        }
    } else if (r.response_format.type != ResponseFormat::Type::Text) {
        c = make(state, format_grammar(r.response_format));
    } else if (!r.strict_tools.empty() && syntax && r.tool_choice == ToolChoice::Auto) {
        const TokenId begin = single_token(tok, syntax->section_begin);
        if (begin < 0) {
            log::warn(
                "strict tools are not enforced: the tool-call section's opening {} is "
                "not one token of this tokenizer",
                syntax->section_begin);
            return nullptr;
        }
        ToolCallGrammarSpec spec;
        spec.tools = r.tools;
        spec.strict = r.strict_tools;
        spec.all_strict = false;
        spec.first_index = first_call_index;
        spec.parallel = r.parallel_tool_calls;
        spec.with_section_begin = false;
        try {
            c = make(state, tool_call_grammar(*syntax, tok, marker_ids(state), spec));
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::BadInput) throw;
            fail(400, "tools", "{}", e.what());
        }
        c->trigger = begin;
    } else {
        return nullptr;
    }
    if (!po.reasoning_parser.empty()) {
        c->think_open = single_token(tok, "<think>");
        c->think_close = single_token(tok, "</think>");
        if (c->think_close < 0) c->think_open = -1;
        c->starts_in_reasoning = in_think && c->think_close >= 0;
    }
    return c;
}

}  // namespace myriad::api
