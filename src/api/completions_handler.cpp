#include "api/completions_handler.h"

#include <memory>

#include "api/api_error.h"
#include "api/generation_core.h"
#include "api/openai_request.h"
#include "api/response_common.h"
#include "api/sse.h"
#include "api/structured_output.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

// Legacy logprobs of one choice, accumulated: tokens, token_logprobs, top_logprobs, text_offset.
struct LegacyLogprobs {
    J tokens = J::array(), token_logprobs = J::array(), top = J::array(), offsets = J::array();
    size_t offset = 0;

    void add(const Tokenizer& tok, TokenId id, const SampleResult* r) {
        const std::string text = token_text(tok, id);
        tokens.push_back(text);
        offsets.push_back(offset);
        offset += text.size();
        if (!r) {
            token_logprobs.push_back(nullptr);
            top.push_back(nullptr);
            return;
        }
        token_logprobs.push_back(r->logprob);
        J t = J::object();
        for (const TokenLogprob& x : r->top) t[token_text(tok, x.token)] = x.logprob;
        top.push_back(std::move(t));
    }
    // The entries added since the last take (a streamed chunk's), keeping the offset counting.
    J take() {
        J j = json();
        tokens = J::array(), token_logprobs = J::array(), top = J::array(), offsets = J::array();
        return j;
    }
    J json() const {
        return {{"tokens", tokens},
                {"token_logprobs", token_logprobs},
                {"top_logprobs", top},
                {"text_offset", offsets}};
    }
};

class CompletionRenderer : public Renderer {
  public:
    CompletionRenderer(const ServerState& state, const CompletionRequest& r,
                       std::vector<std::vector<TokenId>> prompts, std::vector<std::string> echo)
        : tok_(*state.model().tokenizer),
          model_(r.model),
          stream_(r.stream),
          usage_(r.include_usage),
          continuous_(r.continuous_usage),
          echo_(r.echo),
          echo_only_(r.max_tokens && *r.max_tokens == 0),
          want_lp_(r.top_logprobs >= 0),
          n_(static_cast<size_t>(r.n)),
          prompts_(std::move(prompts)),
          echo_text_(std::move(echo)),
          choices_(prompts_.size() * n_) {
        for (size_t i = 0; i < prompts_.size(); ++i)
            last_usage_.prompt_tokens += static_cast<int64_t>(prompts_[i].size());
    }

    bool start(const StreamWriter& w) override {
        for (size_t i = 0; i < choices_.size(); ++i) {
            Choice& c = choices_[i];
            if (!echo_) continue;
            c.text = echo_text_[i / n_];
            // With logprobs the echo waits for the prompt's logprobs (the first event).
            if (want_lp_) {
                c.echo_pending = true;
                continue;
            }
            if (stream_ && !send(w, i, c.text, J(nullptr), nullptr)) return false;
        }
        return true;
    }

    bool event(ChoiceEvent& e, const StreamWriter& w) override {
        Choice& c = choices_[e.choice];
        last_usage_ = e.usage;
        if (c.echo_pending) {
            c.echo_pending = false;
            add_prompt_logprobs(c, prompts_[e.choice / n_], e.prompt_logprobs);
            if (stream_ && !send(w, e.choice, c.text, c.lp.take(), nullptr)) return false;
        }
        if (e.finished) c.reason = e.finish_reason;
        if (echo_only_) {  // the one token generated for it is not part of the answer
            if (!stream_ || !e.finished) return true;
            return send(w, e.choice, "", want_lp_ ? c.lp.take() : J(nullptr), e.finish_reason);
        }
        if (want_lp_)
            for (size_t k = 0; k < e.tokens.size(); ++k)
                c.lp.add(tok_, e.tokens[k], k < e.logprobs.size() ? &e.logprobs[k] : nullptr);
        if (!stream_) {
            c.text += e.delta.content;
            return true;
        }
        return send(w, e.choice, e.delta.content, want_lp_ ? c.lp.take() : J(nullptr),
                    e.finished ? e.finish_reason : nullptr);
    }

    bool finish(const Usage& u, const StreamWriter& w) override {
        const J usage = usage_json(answered(u));
        if (stream_) {
            if (usage_) {
                J c = base();
                c["choices"] = J::array();
                c["usage"] = usage;
                if (!w(sse_event(dump(c)))) return false;
            }
            return w(kSseDone);
        }
        J out = base();
        out["choices"] = J::array();
        for (size_t i = 0; i < choices_.size(); ++i)
            out["choices"].push_back({{"index", i},
                                      {"text", choices_[i].text},
                                      {"logprobs", want_lp_ ? choices_[i].lp.json() : J(nullptr)},
                                      {"finish_reason", choices_[i].reason}});
        out["usage"] = usage;
        return w(dump(out));
    }

    void error(const std::string& message, const StreamWriter& w) override {
        w(sse_event(dump(error_json(500, message))));
    }

  private:
    struct Choice {
        std::string text;  // non-streaming; the echo until it is sent when streaming
        LegacyLogprobs lp;
        bool echo_pending = false;  // the echo waits for the prompt's logprobs
        const char* reason = "abort";
    };

    // The prompt's tokens: the first has no logprob (null, as OpenAI), token k + 1 has
    // prompt_lp[k] (null too if the engine sent none: the request ended before its prefill).
    void add_prompt_logprobs(Choice& c, const std::vector<TokenId>& prompt,
                             const std::vector<SampleResult>& prompt_lp) {
        for (size_t k = 0; k < prompt.size(); ++k)
            c.lp.add(tok_, prompt[k],
                     k > 0 && k - 1 < prompt_lp.size() ? &prompt_lp[k - 1] : nullptr);
    }

    // The usage of what the answer holds: an echo alone generated nothing the client sees.
    Usage answered(Usage u) const {
        if (echo_only_) u.completion_tokens = 0;
        return u;
    }

    J base() const {
        return {
            {"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", model_}};
    }

    bool send(const StreamWriter& w, size_t index, const std::string& text, J logprobs,
              const char* reason) {
        J c = base();
        c["choices"] = J::array({J{{"index", index},
                                   {"text", text},
                                   {"logprobs", std::move(logprobs)},
                                   {"finish_reason", reason ? J(reason) : J(nullptr)}}});
        if (usage_) c["usage"] = continuous_ ? usage_json(answered(last_usage_)) : J(nullptr);
        return w(sse_event(dump(c)));
    }

    const Tokenizer& tok_;
    std::string model_;
    bool stream_, usage_, continuous_, echo_, echo_only_, want_lp_;
    size_t n_;
    std::vector<std::vector<TokenId>> prompts_;
    std::vector<std::string> echo_text_;
    std::vector<Choice> choices_;
    Usage last_usage_;  // the request's so far, for continuous_usage_stats
    std::string id_ = random_id("cmpl");
    int64_t created_ = unix_now();
};

}  // namespace

Reply completions(ServerState& state, std::string_view body) {
    CompletionRequest r = parse_completion_request(body);
    check_model(state, r.model);
    check_test_output(state, r);
    const LoadedServerModel& m = state.model();
    // response_format: the completion is the JSON document (no reasoning, no tools here).
    const std::shared_ptr<const OutputConstraint> constraint =
        format_constraint(state, r.response_format);
    Prepared p;
    std::vector<std::vector<TokenId>> prompts;
    std::vector<std::string> echo;
    for (const Prompt& pr : r.prompts) {
        std::vector<TokenId> ids = pr.text ? m.tokenizer->encode(*pr.text, true) : pr.ids;
        for (TokenId t : ids)
            if (t < 0 || t >= m.tokenizer->vocab_size())
                fail(400, "prompt", "prompt token id {} is outside the vocabulary of {} tokens", t,
                     m.tokenizer->vocab_size());
        if (ids.empty()) fail(400, "prompt", "the prompt encodes to no tokens");
        SamplingParams sp = sampling_params(state, r);
        fit_context(state, r, ids.size(), sp);
        // max_tokens 0 (echo alone): the engine generates one token, which the answer leaves
        // out (vLLM does the same).
        if (sp.max_tokens == 0) sp.max_tokens = 1;
        if (r.echo && r.top_logprobs >= 0) sp.prompt_logprobs = r.top_logprobs;
        sp.constraint = constraint;
        if (r.test_output) {
            sp.forced_tokens = m.tokenizer->encode(*r.test_output, false);
            if (!m.eos_ids.empty()) sp.forced_tokens.push_back(m.eos_ids.front());
        }
        for (int64_t i = 0; i < r.n; ++i) {
            SequenceSpec s{ids, sp};
            if (s.params.seed) s.params.seed = *s.params.seed + static_cast<uint64_t>(i);
            p.specs.push_back(std::move(s));
            p.parsers.push_back(std::nullopt);
            p.counts_prompt.push_back(i == 0);
        }
        p.prompt_tokens += static_cast<int64_t>(ids.size());
        echo.push_back(r.echo ? (pr.text ? *pr.text : m.tokenizer->decode(ids)) : "");
        prompts.push_back(std::move(ids));
    }
    auto renderer =
        std::make_shared<CompletionRenderer>(state, r, std::move(prompts), std::move(echo));
    return run_generation(state, std::move(p), r, std::move(renderer), r.stream);
}

}  // namespace myriad::api
