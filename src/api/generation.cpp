#include "api/generation.h"

#include <thread>

#include "api/api_error.h"
#include "api/client_connection.h"
#include "util/error.h"

namespace myriad::api {

namespace {

const char* reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        default:
            return "abort";
    }
}

double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SamplingParams sampling_params(const ServerState& state, const GenerationFields& g) {
    SamplingParams p;
    if (g.temperature) p.temperature = *g.temperature;
    if (g.top_p) p.top_p = *g.top_p;
    if (g.top_k) p.top_k = *g.top_k;
    if (g.min_p) p.min_p = *g.min_p;
    if (g.repetition_penalty) p.repetition_penalty = *g.repetition_penalty;
    p = state.model().engine->with_defaults(p, g.temperature.has_value(), g.top_p.has_value(),
                                            g.top_k.has_value(), g.min_p.has_value(),
                                            g.repetition_penalty.has_value());
    p.presence_penalty = g.presence_penalty;
    p.frequency_penalty = g.frequency_penalty;
    p.seed = g.seed;
    // Token ids are checked here, before admission, against the model's vocabulary (the engine
    // would refuse them too, but only after the request took its slots).
    const int64_t vocab = state.model().engine->vocab_size();
    for (TokenId t : g.stop_token_ids)
        if (t < 0 || t >= vocab)
            fail(400, "stop_token_ids",
                 "'stop_token_ids' has {}, outside this model's vocabulary of {} tokens", t, vocab);
    for (const auto& [t, b] : g.logit_bias)
        if (t < 0 || t >= vocab)
            fail(400, "logit_bias",
                 "'logit_bias' names token {}, outside this model's vocabulary of {} tokens", t,
                 vocab);
    p.stop_token_ids = g.stop_token_ids;
    p.logit_bias = g.logit_bias;
    p.ignore_eos = g.ignore_eos;
    p.min_tokens = g.min_tokens;
    p.top_logprobs = g.top_logprobs;
    return p;
}

void fit_context(const ServerState& state, const GenerationFields& g, size_t prompt_len,
                 SamplingParams& p) {
    const int64_t ctx = state.model().max_model_len;
    const int64_t n = static_cast<int64_t>(prompt_len);
    if (n >= ctx)
        fail(400, "messages",
             "the prompt has {} tokens; this model's context is {} tokens (--max-model-len); "
             "shorten the prompt",
             n, ctx);
    if (g.max_tokens) {
        if (n + *g.max_tokens > ctx)
            fail(400, "max_tokens",
                 "the prompt has {} tokens and max_tokens is {}: {} in all, more than this model's "
                 "context of {} tokens; lower max_tokens to at most {}",
                 n, *g.max_tokens, n + *g.max_tokens, ctx, ctx - n);
        p.max_tokens = *g.max_tokens;
    } else {
        p.max_tokens = ctx - n;
    }
    if (p.min_tokens > p.max_tokens)
        fail(400, "min_tokens", "min_tokens {} is more than max_tokens {}", p.min_tokens,
             p.max_tokens);
}

Generation::Generation(ServerState& state, std::vector<SequenceSpec> specs,
                       const GenerationFields& g, bool parser_markers)
    : state_(state) {
    const int64_t n = static_cast<int64_t>(specs.size());
    admission_ = state.try_admit(n);
    if (!admission_)
        fail(429, "",
             "the server is full ({} sequences running or queued, limit {} = --max-num-seqs + "
             "--max-queue); retry later",
             state.in_flight(), state.options().max_num_seqs + state.options().max_queue);
    const LoadedServerModel& m = state.model();
    std::vector<TokenId> keep;
    if (parser_markers) keep = parser_special_tokens(*m.tokenizer);
    for (SequenceSpec& s : specs) {
        auto seq = std::make_unique<Seq>(Seq{nullptr,
                                             nullptr,
                                             StopMatcher(g.stop, g.include_stop_str_in_output),
                                             {},
                                             false,
                                             false,
                                             start_});
        seq->detok =
            std::make_unique<IncrementalDetokenizer>(*m.tokenizer, g.skip_special_tokens, keep);
        try {
            seq->handle = m.engine->submit(s.prompt, std::move(s.params));
            if (ClientConnection* c = current_client()) c->hold(seq->handle);
        } catch (const Error& e) {
            cancel();
            fail(e.kind() == ErrorKind::BadInput ? 400 : 500, "", "{}", e.what());
        }
        seqs_.push_back(std::move(seq));
    }
}

Generation::~Generation() {
    cancel();
    const Usage u = total_usage();
    state_.metrics().tokens(u.prompt_tokens, u.cached_tokens, u.completion_tokens);
}

void Generation::cancel() {
    for (auto& s : seqs_)
        if (!s->finished && s->handle) s->handle->cancel();
}

Usage Generation::total_usage() const {
    Usage t;
    for (const auto& s : seqs_) {
        t.prompt_tokens += s->usage.prompt_tokens;
        t.cached_tokens += s->usage.cached_tokens;
        t.completion_tokens += s->usage.completion_tokens;
    }
    return t;
}

void Generation::process(size_t i, RequestOutput& out,
                         const std::function<void(Piece&)>& on_piece) {
    Seq& s = *seqs_[i];
    Piece piece;
    piece.seq = i;
    s.usage.prompt_tokens = out.prompt_tokens;
    s.usage.cached_tokens = out.cached_tokens;
    piece.prompt_logprobs = std::move(out.prompt_logprobs);
    if (!out.tokens.empty()) {
        if (!s.got_first) {
            state_.metrics().time_to_first_token(since(start_));
            s.got_first = true;
        } else {
            state_.metrics().inter_token_latency(since(s.last));
        }
        s.last = std::chrono::steady_clock::now();
    }
    std::string text;
    for (size_t k = 0; k < out.tokens.size(); ++k) {
        const TokenId t = out.tokens[k];
        ++s.usage.completion_tokens;
        piece.tokens.push_back(t);
        if (k < out.logprobs.size()) piece.logprobs.push_back(out.logprobs[k]);
        // The stop token that ended the sequence is not part of the text (OpenAI, vLLM).
        const bool is_stop = out.finished && out.reason == FinishReason::Stop &&
                             k + 1 == out.tokens.size() && t == out.stop_token;
        if (!is_stop) text += s.detok->push(t);
        // A stop string ends the sequence at the token that completed it.
        piece.text += s.stop.feed(text);
        text.clear();
        if (s.stop.stopped()) {
            s.handle->cancel();
            s.finished = true;
            piece.finished = true;
            piece.finish_reason = "stop";
            piece.stop_string = s.stop.matched();
            on_piece(piece);
            return;
        }
    }
    if (out.finished) {
        piece.text += s.stop.feed(s.detok->finish());
        if (!s.stop.stopped()) piece.text += s.stop.flush();
        s.finished = true;
        piece.finished = true;
        piece.finish_reason = s.stop.stopped() ? "stop" : reason_name(out.reason);
        if (s.stop.stopped()) piece.stop_string = s.stop.matched();
        if (!out.error.empty()) piece.error = out.error;
        s.usage.completion_tokens = std::min(s.usage.completion_tokens, out.completion_tokens);
    }
    if (piece.finished || !piece.text.empty() || !piece.tokens.empty() ||
        !piece.prompt_logprobs.empty())
        on_piece(piece);
}

void Generation::finish_cancelled(size_t i, const std::function<void(Piece&)>& on_piece) {
    Seq& s = *seqs_[i];
    s.handle->cancel();
    s.finished = true;
    Piece piece;
    piece.seq = i;
    piece.finished = true;
    piece.finish_reason = "abort";
    on_piece(piece);
}

bool Generation::next(const std::function<void(Piece&)>& on_piece) {
    std::vector<size_t> open;
    for (size_t i = 0; i < seqs_.size(); ++i)
        if (!seqs_[i]->finished) open.push_back(i);
    if (open.empty()) return false;
    if (state_.cancelling()) {
        for (size_t i : open) finish_cancelled(i, on_piece);
        return false;
    }
    RequestOutput out;
    if (open.size() == 1) {
        // One sequence: block on its queue.
        if (!seqs_[open[0]]->handle->next(out)) {
            finish_cancelled(open[0], on_piece);
            return false;
        }
        process(open[0], out, on_piece);
        return true;
    }
    // Several: take whatever is ready from each, else wait a little.
    bool progressed = false;
    for (size_t i : open)
        while (!seqs_[i]->finished && seqs_[i]->handle->try_next(out)) {
            process(i, out, on_piece);
            progressed = true;
        }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return true;
}

}  // namespace myriad::api
