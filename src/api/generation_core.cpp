#include "api/generation_core.h"

#include "api/api_error.h"
#include "api/client_connection.h"
#include "api/prompt_renderer.h"
#include "api/response_common.h"
#include "api/structured_output.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

int count_tool_calls(const J& messages) {
    int n = 0;
    for (const J& m : messages)
        if (m.contains("tool_calls") && m["tool_calls"].is_array())
            n += static_cast<int>(m["tool_calls"].size());
    return n;
}

// One request in flight: its generation, a parser per sequence, the renderer.
struct Run {
    std::unique_ptr<Generation> gen;
    std::vector<std::unique_ptr<OutputParser>> parsers;  // null: raw text
    std::vector<bool> counts_prompt;
    int64_t prompt_tokens = 0;
    bool require_tool_call = false;
    std::shared_ptr<Renderer> renderer;

    ChoiceEvent to_event(Piece& p) {
        ChoiceEvent e;
        e.choice = p.seq;
        e.tokens = std::move(p.tokens);
        e.logprobs = std::move(p.logprobs);
        e.prompt_logprobs = std::move(p.prompt_logprobs);
        OutputParser* parser = parsers[p.seq].get();
        if (!parser) {
            e.delta.content = std::move(p.text);
        } else {
            if (!p.text.empty()) e.delta = parser->feed(p.text);
            if (p.finished) {
                OutputDelta tail = parser->finish();
                e.delta.reasoning += tail.reasoning;
                e.delta.content += tail.content;
                for (ToolCallDelta& t : tail.tool_calls) e.delta.tool_calls.push_back(std::move(t));
            }
        }
        e.finished = p.finished;
        e.finish_reason = p.finish_reason;
        e.stop_string = std::move(p.stop_string);
        if (p.finished && parser) e.parsed = &parser->result();
        if (p.finished && parser && require_tool_call && p.error.empty() &&
            parser->result().tool_calls.empty() && std::string_view(p.finish_reason) == "stop")
            p.error = fmt::format(
                "tool_choice asked for a tool call, and the model's output holds none that "
                "parses ({} characters of content); retry, or use tool_choice auto",
                parser->result().content ? parser->result().content->size() : 0);
        e.cached_tokens = gen->usage(p.seq).cached_tokens;
        e.usage = usage();
        return e;
    }

    Usage usage() const {
        Usage u = gen->total_usage();
        u.prompt_tokens = prompt_tokens;
        u.cached_tokens = 0;
        for (size_t i = 0; i < gen->size(); ++i)
            if (counts_prompt[i]) u.cached_tokens += gen->usage(i).cached_tokens;
        return u;
    }
};

}  // namespace

ParserOptions parser_options(const ServerOptions& o, bool in_think, bool tools_enabled) {
    ParserOptions po = default_parser_options(o.model_type, in_think, tools_enabled);
    if (!o.tool_call_parser.empty()) po.tool_parser = o.tool_call_parser;
    if (!o.reasoning_parser.empty()) po.reasoning_parser = o.reasoning_parser;
    return po;
}

std::string tool_parser_name(const ServerOptions& o) {
    return parser_options(o, false, true).tool_parser;
}

std::string reasoning_parser_name(const ServerOptions& o) {
    return parser_options(o, true, true).reasoning_parser;
}

Reply run_generation(ServerState& state, Prepared prepared, const GenerationFields& g,
                     std::shared_ptr<Renderer> renderer, bool stream) {
    auto run = std::make_shared<Run>();
    for (const auto& po : prepared.parsers)
        run->parsers.push_back(po ? make_output_parser(*po) : nullptr);
    run->counts_prompt = std::move(prepared.counts_prompt);
    run->counts_prompt.resize(prepared.specs.size(), false);
    run->prompt_tokens = prepared.prompt_tokens;
    run->require_tool_call = prepared.require_tool_call;
    run->renderer = std::move(renderer);
    run->gen =
        std::make_unique<Generation>(state, std::move(prepared.specs), g, prepared.parser_markers);

    Reply reply;
    reply.content_type = run->renderer->content_type();
    if (!stream) {
        std::string body;
        const StreamWriter to_body = [&body](std::string_view s) {
            body += s;
            return true;
        };
        std::string error;
        run->renderer->start(to_body);
        while (run->gen->next([&](Piece& p) {
            ChoiceEvent e = run->to_event(p);
            if (!p.error.empty()) error = p.error;
            run->renderer->event(e, to_body);
        })) {
            if (client_gone()) {
                run->gen->cancel();
                fail(499, "", "the client closed the connection");
            }
        }
        if (!error.empty()) fail(500, "", "generation failed: {}", error);
        run->renderer->finish(run->usage(), to_body);
        reply.body = std::move(body);
        return reply;
    }

    reply.content_type = "text/event-stream";
    reply.stream = [run](const StreamWriter& write) {
        bool alive = run->renderer->start(write);
        bool failed = false;
        while (alive && !failed && run->gen->next([&](Piece& p) {
            if (!alive || failed) return;
            const bool engine_failed = !p.error.empty();
            ChoiceEvent e;
            if (!engine_failed) e = run->to_event(p);
            if (!p.error.empty()) {
                run->renderer->error(engine_failed ? "generation failed: " + p.error : p.error,
                                     write);
                failed = true;
                return;
            }
            alive = run->renderer->event(e, write);
        })) {
        }
        if (!alive || failed) {
            run->gen->cancel();
            return;
        }
        run->renderer->finish(run->usage(), write);
    };
    return reply;
}

std::vector<TokenId> chat_prompt_ids(const ServerState& state, const ChatRequest& r) {
    const LoadedServerModel& m = state.model();
    return m.tokenizer->encode(m.renderer->render(r), false);
}

Prepared prepare_chat(ServerState& state, ChatRequest& r) {
    check_model(state, r.model);
    check_test_output(state, r);
    const LoadedServerModel& m = state.model();
    const std::string prompt = m.renderer->render(r);
    const std::vector<TokenId> ids = m.tokenizer->encode(prompt, false);
    SamplingParams sp = sampling_params(state, r);
    fit_context(state, r, ids.size(), sp);

    const bool in_think = prompt_ends_in_think(prompt);
    ParserOptions po = parser_options(state.options(), in_think, r.tool_choice != ToolChoice::None);
    if (!r.tools.is_null())
        for (const nlohmann::ordered_json& t : r.tools)
            po.tool_names.push_back(t["function"]["name"].get<std::string>());
    // Structured output: tool_choice required/named (a call in the model's syntax, its
    // arguments to the tool's schema), response_format, strict tools; after reasoning.
    sp.constraint = output_constraint(state, r, po, in_think, count_tool_calls(r.messages));
    if (r.test_output) {
        // The test facility's text follows what tool_choice required/named would make the
        // model open with (the section, the named call's header), all of it forced.
        std::string forced;
        if ((r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) &&
            !po.tool_parser.empty()) {
            if (in_think) forced = "</think>";
            forced += forced_tool_call_prefix(
                po.tool_parser, r.tool_choice == ToolChoice::Named ? r.tool_choice_name : "",
                count_tool_calls(r.messages));
        }
        sp.forced_tokens = m.tokenizer->encode(forced + *r.test_output, false);
        if (!m.eos_ids.empty()) sp.forced_tokens.push_back(m.eos_ids.front());
    }

    Prepared p;
    p.prompt_tokens = static_cast<int64_t>(ids.size());
    p.parser_markers = true;
    p.require_tool_call = !po.tool_parser.empty() && (r.tool_choice == ToolChoice::Required ||
                                                      r.tool_choice == ToolChoice::Named);
    for (int64_t i = 0; i < r.n; ++i) {
        SequenceSpec s{ids, sp};
        if (s.params.seed) s.params.seed = *s.params.seed + static_cast<uint64_t>(i);
        p.specs.push_back(std::move(s));
        p.parsers.push_back(po);
        p.counts_prompt.push_back(i == 0);
    }
    return p;
}

}  // namespace myriad::api
