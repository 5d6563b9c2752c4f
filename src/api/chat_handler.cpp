#include "api/chat_handler.h"

#include <map>
#include <memory>

#include "api/api_error.h"
#include "api/generation_core.h"
#include "api/openai_request.h"
#include "api/response_common.h"
#include "api/sse.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

class ChatRenderer : public Renderer {
  public:
    ChatRenderer(const ServerState& state, const ChatRequest& r, int64_t prompt_tokens)
        : tok_(*state.model().tokenizer),
          model_(r.model),
          stream_(r.stream),
          usage_(r.include_usage),
          continuous_(r.continuous_usage),
          want_lp_(r.top_logprobs >= 0),
          choices_(static_cast<size_t>(r.n)) {
        last_usage_.prompt_tokens = prompt_tokens;
    }

    bool start(const StreamWriter& w) override {
        if (!stream_) return true;
        for (size_t i = 0; i < choices_.size(); ++i)
            if (!send(w, i, J{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr))
                return false;
        return true;
    }

    bool event(ChoiceEvent& e, const StreamWriter& w) override {
        Choice& c = choices_[e.choice];
        last_usage_ = e.usage;
        if (!stream_) {
            if (want_lp_) c.lps.insert(c.lps.end(), e.logprobs.begin(), e.logprobs.end());
            if (e.finished) {
                c.reason = e.finish_reason;
                if (e.parsed) c.parsed = *e.parsed;
            }
            return true;
        }
        J delta = delta_json(c, e.delta);
        J lp = want_lp_ && !e.logprobs.empty() ? J{{"content", chat_logprobs(tok_, e.logprobs)}}
                                               : J(nullptr);
        if (!e.finished && delta.empty() && lp.is_null()) return true;
        return send(w, e.choice, std::move(delta), std::move(lp),
                    e.finished ? final_reason(c, e.finish_reason) : nullptr);
    }

    bool finish(const Usage& u, const StreamWriter& w) override {
        if (stream_) {
            if (usage_) {
                J c = chunk_base();
                c["choices"] = J::array();
                c["usage"] = usage_json(u);
                if (!w(sse_event(dump(c)))) return false;
            }
            return w(kSseDone);
        }
        J out = {{"id", id_},
                 {"object", "chat.completion"},
                 {"created", created_},
                 {"model", model_},
                 {"choices", J::array()}};
        for (size_t i = 0; i < choices_.size(); ++i) {
            Choice& c = choices_[i];
            const ParsedOutput& res = c.parsed;
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
                 {"logprobs", want_lp_ ? J{{"content", chat_logprobs(tok_, c.lps)}} : J(nullptr)},
                 {"finish_reason", final_reason(c, c.reason)}});
        }
        out["usage"] = usage_json(u);
        return w(dump(out));
    }

    void error(const std::string& message, const StreamWriter& w) override {
        w(sse_event(dump(error_json(500, message))));
    }

  private:
    struct Choice {
        std::map<int, std::string> call_ids;  // tool-call index -> id sent
        bool any_tool_call = false;
        const char* reason = "abort";
        ParsedOutput parsed;            // non-streaming: the parser's result
        std::vector<SampleResult> lps;  // non-streaming
    };

    static const char* final_reason(const Choice& c, const char* reason) {
        if (c.any_tool_call && std::string_view(reason) == "stop") return "tool_calls";
        return reason;
    }

    // The delta's JSON for one choice; assigns ids to calls the parser left without one.
    static J delta_json(Choice& c, const OutputDelta& d) {
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
                    c.call_ids[t.index] =
                        t.id && !t.id->empty() ? *t.id : random_id("chatcmpl-tool");
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

    J chunk_base() const {
        return {{"id", id_},
                {"object", "chat.completion.chunk"},
                {"created", created_},
                {"model", model_}};
    }

    bool send(const StreamWriter& w, size_t index, J delta, J logprobs, const char* reason) {
        J c = chunk_base();
        c["choices"] = J::array({J{{"index", index},
                                   {"delta", std::move(delta)},
                                   {"logprobs", std::move(logprobs)},
                                   {"finish_reason", reason ? J(reason) : J(nullptr)}}});
        if (usage_) c["usage"] = continuous_ ? usage_json(last_usage_) : J(nullptr);
        return w(sse_event(dump(c)));
    }

    const Tokenizer& tok_;
    std::string model_;
    bool stream_, usage_, continuous_, want_lp_;
    std::vector<Choice> choices_;
    Usage last_usage_;  // the request's so far, for continuous_usage_stats
    std::string id_ = random_id("chatcmpl");
    int64_t created_ = unix_now();
};

}  // namespace

Reply chat_completions(ServerState& state, std::string_view body) {
    ChatRequest r = parse_chat_request(body);
    Prepared p = prepare_chat(state, r);
    auto renderer = std::make_shared<ChatRenderer>(state, r, p.prompt_tokens);
    return run_generation(state, std::move(p), r, std::move(renderer), r.stream);
}

}  // namespace myriad::api
