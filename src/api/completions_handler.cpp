#include "api/completions_handler.h"

#include <memory>

#include "api/api_error.h"
#include "api/client_connection.h"
#include "api/generation.h"
#include "api/openai_request.h"
#include "api/response_common.h"
#include "api/sse.h"

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
    J json() const {
        return {{"tokens", tokens},
                {"token_logprobs", token_logprobs},
                {"top_logprobs", top},
                {"text_offset", offsets}};
    }
};

struct Job {
    ServerState* state;
    CompletionRequest req;
    std::vector<std::vector<TokenId>> prompts;  // per prompt
    std::vector<std::string> echo_text;         // per prompt
    std::unique_ptr<Generation> gen;
    std::string id = random_id("cmpl");
    int64_t created = unix_now();
};

J base(const Job& job, const char* object) {
    return {{"id", job.id}, {"object", object}, {"created", job.created}, {"model", job.req.model}};
}

}  // namespace

Reply completions(ServerState& state, std::string_view body) {
    auto job = std::make_shared<Job>();
    job->state = &state;
    job->req = parse_completion_request(body);
    const CompletionRequest& r = job->req;
    check_model(state, r.model);
    check_test_output(state, r);
    const LoadedServerModel& m = state.model();
    std::vector<SequenceSpec> specs;
    for (const Prompt& p : r.prompts) {
        std::vector<TokenId> ids = p.text ? m.tokenizer->encode(*p.text, true) : p.ids;
        for (TokenId t : ids)
            if (t < 0 || t >= m.tokenizer->vocab_size())
                fail(400, "prompt", "prompt token id {} is outside the vocabulary of {} tokens", t,
                     m.tokenizer->vocab_size());
        if (ids.empty()) fail(400, "prompt", "the prompt encodes to no tokens");
        SamplingParams sp = sampling_params(state, r);
        fit_context(state, r, ids.size(), sp);
        if (r.test_output) {
            sp.forced_tokens = m.tokenizer->encode(*r.test_output, false);
            if (!m.eos_ids.empty()) sp.forced_tokens.push_back(m.eos_ids.front());
        }
        for (int64_t i = 0; i < r.n; ++i) {
            SequenceSpec s{ids, sp};
            if (s.params.seed) s.params.seed = *s.params.seed + static_cast<uint64_t>(i);
            specs.push_back(std::move(s));
        }
        job->echo_text.push_back(r.echo ? (p.text ? *p.text : m.tokenizer->decode(ids)) : "");
        job->prompts.push_back(std::move(ids));
    }
    job->gen = std::make_unique<Generation>(state, std::move(specs), r, false);
    const Tokenizer& tok = *m.tokenizer;
    const size_t nseq = job->gen->size();
    const bool want_lp = r.top_logprobs >= 0;
    auto prompt_of = [job](size_t seq) { return seq / static_cast<size_t>(job->req.n); };

    Reply reply;
    if (!r.stream) {
        std::vector<std::string> text(nseq);
        std::vector<const char*> reason(nseq, "abort");
        std::vector<LegacyLogprobs> lps(nseq);
        for (size_t i = 0; i < nseq; ++i) {
            text[i] = job->echo_text[prompt_of(i)];
            if (r.echo && want_lp)
                for (TokenId t : job->prompts[prompt_of(i)]) lps[i].add(tok, t, nullptr);
        }
        std::string error;
        while (job->gen->next([&](Piece& p) {
            text[p.seq] += p.text;
            if (want_lp)
                for (size_t k = 0; k < p.tokens.size(); ++k)
                    lps[p.seq].add(tok, p.tokens[k],
                                   k < p.logprobs.size() ? &p.logprobs[k] : nullptr);
            if (p.finished) reason[p.seq] = p.finish_reason;
            if (!p.error.empty()) error = p.error;
        })) {
            if (client_gone()) {
                job->gen->cancel();
                fail(499, "", "the client closed the connection");
            }
        }
        if (!error.empty()) fail(500, "", "generation failed: {}", error);
        J out = base(*job, "text_completion");
        out["choices"] = J::array();
        for (size_t i = 0; i < nseq; ++i)
            out["choices"].push_back({{"index", i},
                                      {"text", text[i]},
                                      {"logprobs", want_lp ? lps[i].json() : J(nullptr)},
                                      {"finish_reason", reason[i]}});
        Usage u = job->gen->total_usage();
        u.prompt_tokens = 0;
        for (const auto& p : job->prompts) u.prompt_tokens += static_cast<int64_t>(p.size());
        out["usage"] = usage_json(u);
        reply.body = dump(out);
        return reply;
    }

    reply.content_type = "text/event-stream";
    reply.stream = [job, want_lp, prompt_of, nseq](const StreamWriter& write) {
        const Tokenizer& tok = *job->state->model().tokenizer;
        auto chunk = [&](size_t index, const std::string& text, J logprobs, const char* reason) {
            J c = base(*job, "text_completion");
            c["choices"] = J::array({J{{"index", index},
                                       {"text", text},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", reason ? J(reason) : J(nullptr)}}});
            if (job->req.include_usage) c["usage"] = nullptr;
            return write(sse_event(dump(c)));
        };
        bool alive = true;
        if (job->req.echo)
            for (size_t i = 0; i < nseq && alive; ++i) {
                LegacyLogprobs lp;
                if (want_lp)
                    for (TokenId t : job->prompts[prompt_of(i)]) lp.add(tok, t, nullptr);
                alive = chunk(i, job->echo_text[prompt_of(i)], want_lp ? lp.json() : J(nullptr),
                              nullptr);
            }
        while (alive && job->gen->next([&](Piece& p) {
            if (!alive) return;
            if (!p.error.empty()) {
                alive = write(sse_event(dump(error_json(500, "generation failed: " + p.error))));
                return;
            }
            J lp = nullptr;
            if (want_lp) {
                LegacyLogprobs l;
                for (size_t k = 0; k < p.tokens.size(); ++k)
                    l.add(tok, p.tokens[k], k < p.logprobs.size() ? &p.logprobs[k] : nullptr);
                lp = l.json();
            }
            alive = chunk(p.seq, p.text, std::move(lp), p.finished ? p.finish_reason : nullptr);
        })) {
        }
        if (!alive) {
            job->gen->cancel();
            return;
        }
        if (job->req.include_usage) {
            Usage u = job->gen->total_usage();
            u.prompt_tokens = 0;
            for (const auto& p : job->prompts) u.prompt_tokens += static_cast<int64_t>(p.size());
            J c = base(*job, "text_completion");
            c["choices"] = J::array();
            c["usage"] = usage_json(u);
            if (!write(sse_event(dump(c)))) return;
        }
        write(kSseDone);
    };
    return reply;
}

}  // namespace myriad::api
