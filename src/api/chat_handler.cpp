#include "api/chat_handler.h"

#include <map>
#include <memory>

#include "api/api_error.h"
#include "api/client_connection.h"
#include "api/generation.h"
#include "api/openai_request.h"
#include "api/output_parser.h"
#include "api/prompt_renderer.h"
#include "api/response_common.h"
#include "api/sse.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

// One choice's parser and what it produced so far.
struct ChoiceState {
    std::unique_ptr<OutputParser> parser;
    std::map<int, std::string> call_ids;  // tool-call index -> id sent
    bool any_tool_call = false;
    bool sent_role = false;
};

struct Job {
    ServerState* state;
    ChatRequest req;
    std::unique_ptr<Generation> gen;
    std::vector<ChoiceState> choices;
    std::string id = random_id("chatcmpl");
    int64_t created = unix_now();
    int64_t prompt_tokens = 0;
};

int count_tool_calls(const J& messages) {
    int n = 0;
    for (const J& m : messages)
        if (m.contains("tool_calls") && m["tool_calls"].is_array())
            n += static_cast<int>(m["tool_calls"].size());
    return n;
}

const char* final_reason(const ChoiceState& c, const char* reason) {
    if (c.any_tool_call && std::string_view(reason) == "stop") return "tool_calls";
    return reason;
}

// The delta's JSON for one choice; assigns ids to calls the parser left without one.
J delta_json(ChoiceState& c, const OutputDelta& d) {
    J j = J::object();
    if (!d.reasoning.empty()) {
        j["reasoning_content"] = d.reasoning;
        j["reasoning"] = d.reasoning;
    }
    if (!d.content.empty()) j["content"] = d.content;
    if (!d.tool_calls.empty()) {
        J calls = J::array();
        for (const ToolCallDelta& t : d.tool_calls) {
            J call = {{"index", t.index}};
            J fn = J::object();
            if (!c.call_ids.count(t.index)) {
                c.call_ids[t.index] = t.id && !t.id->empty() ? *t.id : random_id("chatcmpl-tool");
                call["id"] = c.call_ids[t.index];
                call["type"] = "function";
            }
            if (t.name) fn["name"] = *t.name;
            if (!t.arguments.empty() || fn.empty()) fn["arguments"] = t.arguments;
            call["function"] = std::move(fn);
            calls.push_back(std::move(call));
        }
        c.any_tool_call = true;
        j["tool_calls"] = std::move(calls);
    }
    return j;
}

J chunk_base(const Job& job) {
    return {{"id", job.id},
            {"object", "chat.completion.chunk"},
            {"created", job.created},
            {"model", job.req.model}};
}

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

Reply chat_completions(ServerState& state, std::string_view body) {
    auto job = std::make_shared<Job>();
    job->state = &state;
    job->req = parse_chat_request(body);
    ChatRequest& r = job->req;
    check_model(state, r.model);
    check_test_output(state, r);
    const LoadedServerModel& m = state.model();
    const std::string prompt = m.renderer->render(r);
    const std::vector<TokenId> ids = m.tokenizer->encode(prompt, false);
    job->prompt_tokens = static_cast<int64_t>(ids.size());
    SamplingParams sp = sampling_params(state, r);
    fit_context(state, r, ids.size(), sp);

    const bool in_think = prompt_ends_in_think(prompt);
    const ParserOptions po =
        parser_options(state.options(), in_think, r.tool_choice != ToolChoice::None);
    // tool_choice required/named: force the section opening (and the named call's header); an
    // open <think> is closed first so the reasoning ends.
    std::string forced;
    if ((r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) &&
        !po.tool_parser.empty()) {
        if (in_think) forced = "</think>";
        forced += forced_tool_call_prefix(
            po.tool_parser, r.tool_choice == ToolChoice::Named ? r.tool_choice_name : "",
            count_tool_calls(r.messages));
    }
    if (r.test_output) forced += *r.test_output;
    if (!forced.empty()) {
        sp.forced_tokens = m.tokenizer->encode(forced, false);
        if (r.test_output && !m.eos_ids.empty()) sp.forced_tokens.push_back(m.eos_ids.back());
    }

    std::vector<SequenceSpec> specs;
    for (int64_t i = 0; i < r.n; ++i) {
        SequenceSpec s{ids, sp};
        if (s.params.seed) s.params.seed = *s.params.seed + static_cast<uint64_t>(i);
        specs.push_back(std::move(s));
        job->choices.push_back(ChoiceState{make_output_parser(po), {}, false, false});
    }
    job->gen = std::make_unique<Generation>(state, std::move(specs), r, true);
    const bool want_lp = r.top_logprobs >= 0;

    Reply reply;
    if (!r.stream) {
        const size_t n = job->choices.size();
        std::vector<const char*> reason(n, "abort");
        std::vector<std::vector<SampleResult>> lps(n);
        std::string error;
        while (job->gen->next([&](Piece& p) {
            ChoiceState& c = job->choices[p.seq];
            if (!p.text.empty()) c.parser->feed(p.text);
            if (want_lp) lps[p.seq].insert(lps[p.seq].end(), p.logprobs.begin(), p.logprobs.end());
            if (p.finished) {
                c.parser->finish();
                reason[p.seq] = p.finish_reason;
            }
            if (!p.error.empty()) error = p.error;
        })) {
            if (client_gone()) {
                job->gen->cancel();
                fail(499, "", "the client closed the connection");
            }
        }
        if (!error.empty()) fail(500, "", "generation failed: {}", error);
        J out = {{"id", job->id},
                 {"object", "chat.completion"},
                 {"created", job->created},
                 {"model", r.model},
                 {"choices", J::array()}};
        for (size_t i = 0; i < n; ++i) {
            ChoiceState& c = job->choices[i];
            const ParsedOutput& res = c.parser->result();
            J msg = {{"role", "assistant"}};
            msg["content"] = res.content ? J(*res.content) : J(nullptr);
            if (res.reasoning) {
                msg["reasoning_content"] = *res.reasoning;
                msg["reasoning"] = *res.reasoning;
            }
            if (!res.tool_calls.empty()) {
                J calls = J::array();
                for (const ToolCall& t : res.tool_calls) {
                    const std::string tid = !t.id.empty() ? t.id : random_id("chatcmpl-tool");
                    calls.push_back({{"id", tid},
                                     {"type", "function"},
                                     {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
                }
                msg["tool_calls"] = std::move(calls);
                c.any_tool_call = true;
            }
            out["choices"].push_back(
                {{"index", i},
                 {"message", std::move(msg)},
                 {"logprobs",
                  want_lp ? J{{"content", chat_logprobs(*m.tokenizer, lps[i])}} : J(nullptr)},
                 {"finish_reason", final_reason(c, reason[i])}});
        }
        Usage u = job->gen->total_usage();
        u.prompt_tokens = job->prompt_tokens;
        u.cached_tokens = job->gen->usage(0).cached_tokens;
        out["usage"] = usage_json(u);
        reply.body = dump(out);
        return reply;
    }

    reply.content_type = "text/event-stream";
    reply.stream = [job, want_lp](const StreamWriter& write) {
        const Tokenizer& tok = *job->state->model().tokenizer;
        const bool usage = job->req.include_usage;
        auto send = [&](size_t index, J delta, J logprobs, const char* reason) {
            J c = chunk_base(*job);
            c["choices"] = J::array({J{{"index", index},
                                       {"delta", std::move(delta)},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", reason ? J(reason) : J(nullptr)}}});
            if (usage) c["usage"] = nullptr;
            return write(sse_event(dump(c)));
        };
        bool alive = true;
        for (size_t i = 0; i < job->choices.size() && alive; ++i) {
            alive = send(i, J{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
            job->choices[i].sent_role = true;
        }
        while (alive && job->gen->next([&](Piece& p) {
            if (!alive) return;
            if (!p.error.empty()) {
                alive = write(sse_event(dump(error_json(500, "generation failed: " + p.error))));
                return;
            }
            ChoiceState& c = job->choices[p.seq];
            J delta = p.text.empty() ? J::object() : delta_json(c, c.parser->feed(p.text));
            if (p.finished) {
                J tail = delta_json(c, c.parser->finish());
                for (auto& [k, v] : tail.items()) {
                    if (delta.contains(k) && delta[k].is_string())
                        delta[k] = delta[k].get<std::string>() + v.get<std::string>();
                    else if (delta.contains(k) && delta[k].is_array())
                        for (auto& x : v) delta[k].push_back(x);
                    else
                        delta[k] = v;
                }
            }
            J lp = want_lp && !p.logprobs.empty() ? J{{"content", chat_logprobs(tok, p.logprobs)}}
                                                  : J(nullptr);
            if (!p.finished && delta.empty() && lp.is_null()) return;
            alive = send(p.seq, std::move(delta), std::move(lp),
                         p.finished ? final_reason(c, p.finish_reason) : nullptr);
        })) {
        }
        if (!alive) {
            job->gen->cancel();
            return;
        }
        if (usage) {
            Usage u = job->gen->total_usage();
            u.prompt_tokens = job->prompt_tokens;
            u.cached_tokens = job->gen->usage(0).cached_tokens;
            J c = chunk_base(*job);
            c["choices"] = J::array();
            c["usage"] = usage_json(u);
            if (!write(sse_event(dump(c)))) return;
        }
        write(kSseDone);
    };
    return reply;
}

}  // namespace myriad::api
