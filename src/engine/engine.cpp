#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <span>

#include "engine/sampler.h"
#include "engine/step_builder.h"
#include "engine/warm_up_step.h"
#include "util/error.h"
#include "util/log.h"
#include "util/memory.h"

namespace myriad {

Engine::Engine(WorkerGroup& workers, EngineConfig config)
    : workers_(workers),
      config_(std::move(config)),
      blocks_(workers.options().kv_blocks, workers.options().kv_block_size, config_.prefix_caching),
      scheduler_(config_.scheduler, blocks_),
      drafter_(config_.drafter ? config_.drafter : make_drafter(config_.speculative, workers)) {
    if (drafter_ && config_.speculative.num_speculative_tokens < 1)
        bad_input("--num-speculative-tokens {} must be at least 1",
                  config_.speculative.num_speculative_tokens);
    if (drafter_) hidden_layers_ = drafter_->hidden_layers();
    const int64_t capacity = workers.options().kv_blocks * workers.options().kv_block_size;
    max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len
                                               : workers.config().max_position_embeddings;
    max_model_len_ = std::min(max_model_len_, capacity);
    if (config_.scheduler.max_num_seqs < 1 || config_.scheduler.max_num_batched_tokens < 1)
        bad_input("--max-num-seqs and --max-num-batched-tokens must be at least 1");
    stats_.blocks_total = blocks_.num_blocks();
    const bool warm = config_.warm_up == WarmUp::On ||
                      (config_.warm_up == WarmUp::Auto && workers.options().device == Device::Cuda);
    if (warm) warm_up();
}

// One step as large as the scheduler makes them (warm_up_step.h), every sequence sampled
// (non-greedy, so a sampling backend sizes its sort workspace), its prefills attending to as
// much context as one naive-form call takes. Its KV goes to free blocks that the block manager
// has not handed out: any sequence writes a slot before reading it, and the prefix cache only
// keeps blocks that real steps filled, so nothing of it is ever read by a request.
void Engine::warm_up() {
    WarmUpLimits limits;
    limits.max_num_batched_tokens = config_.scheduler.max_num_batched_tokens;
    limits.max_num_seqs = config_.scheduler.max_num_seqs;
    limits.max_model_len = max_model_len_;
    limits.kv_blocks = workers_.options().kv_blocks;
    limits.block_size = workers_.options().kv_block_size;
    limits.naive_context_tokens = workers_.options().model.naive_context_tokens;
    StepInput st = warm_up_step(limits);
    if (st.seqs.empty()) return;
    // And prompt logprobs over a prefill's rows (the lm_head pass they take is sized here too).
    for (const SeqSlice& s : st.seqs)
        if (s.q_len > 1) {
            st.logprob_spans.push_back({s.q_begin, std::min(s.q_len - 1, kLogprobRowsPerPass)});
            st.logprob_targets.assign(static_cast<size_t>(st.logprob_spans[0].n), 0);
            st.logprob_top_n = kMaxTopLogprobs;
            break;
        }
    // Speculation makes up to k + 1 logit rows a decoding sequence: as many rows here (more of
    // the prefills' rows), so the logits and sampling workspaces are sized for them too.
    if (drafter_) {
        const int64_t want = std::min(
            config_.scheduler.max_num_seqs * (config_.speculative.num_speculative_tokens + 1),
            st.num_tokens());
        std::vector<bool> is_row(static_cast<size_t>(st.num_tokens()), false);
        for (int32_t r : st.logit_rows) is_row[static_cast<size_t>(r)] = true;
        int64_t have = static_cast<int64_t>(st.logit_rows.size());
        for (int64_t r = 0; r < st.num_tokens() && have < want; ++r)
            if (!is_row[static_cast<size_t>(r)]) {
                is_row[static_cast<size_t>(r)] = true;
                ++have;
            }
        st.logit_rows.clear();
        for (int64_t r = 0; r < st.num_tokens(); ++r)
            if (is_row[static_cast<size_t>(r)]) st.logit_rows.push_back(static_cast<int32_t>(r));
    }
    LogprobRows logprobs;
    const int64_t tokens = st.num_tokens();
    int64_t decodes = 0, prefill_ctx = 0;
    for (const SeqSlice& s : st.seqs) {
        if (s.q_len == 1 && s.ctx_len == 1)
            ++decodes;
        else
            prefill_ctx += s.ctx_len;
    }

    const size_t rows = st.logit_rows.size();
    std::vector<float> logits(rows * static_cast<size_t>(workers_.config().vocab_size));
    std::vector<int32_t> tokens_out(rows, -1);
    StepSampling sampling;
    if (workers_.backend_samples()) {
        SampleRow row;
        row.greedy = false;
        // Across ranks every row takes the whole-row path, the larger (candidates' buffers are
        // small and grow when first needed).
        row.top_k = workers_.options().tp > 1 ? 0 : 50;
        row.top_p = 0.9;
        row.uniform = 0.5;
        sampling.rows.assign(rows, row);
        // Every row masked (all tokens allowed), so the token-mask buffer is sized too.
        sampling.mask_words = static_cast<int32_t>((workers_.config().vocab_size + 31) / 32);
        sampling.masks.assign(rows * static_cast<size_t>(sampling.mask_words), ~0u);
        for (size_t i = 0; i < rows; ++i) sampling.rows[i].mask = static_cast<int32_t>(i);
    }
    const auto start = std::chrono::steady_clock::now();
    try {
        workers_.step(st, logits.data(), workers_.backend_samples() ? &sampling : nullptr,
                      tokens_out.data(), &logprobs);
    } catch (const std::exception& e) {
        bad_input(
            "the warm-up step ({} tokens in {} sequences, the largest this engine "
            "schedules) failed: {}; lower --max-num-batched-tokens or --max-num-seqs",
            tokens, st.seqs.size(), e.what());
    }
    log::info(
        "warm-up: one step of {} tokens in {} sequences ({} decoding; {} prefilling {} "
        "tokens over {} tokens of context) in {:.2f} s",
        tokens, st.seqs.size(), decodes, st.seqs.size() - decodes, tokens - decodes, prefill_ctx,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

SamplingParams Engine::with_defaults(SamplingParams p, bool temperature_set, bool top_p_set,
                                     bool top_k_set, bool min_p_set, bool repetition_set) const {
    const SamplingDefaults& d = config_.defaults;
    if (!temperature_set && d.temperature) p.temperature = *d.temperature;
    if (!top_p_set && d.top_p) p.top_p = *d.top_p;
    if (!top_k_set && d.top_k) p.top_k = *d.top_k;
    if (!min_p_set && d.min_p) p.min_p = *d.min_p;
    if (!repetition_set && d.repetition_penalty) p.repetition_penalty = *d.repetition_penalty;
    return p;
}

std::shared_ptr<RequestHandle> Engine::submit(const std::vector<TokenId>& prompt,
                                              SamplingParams p) {
    const int64_t vocab = workers_.config().vocab_size;
    if (prompt.empty()) bad_input("the prompt is empty");
    for (TokenId t : prompt)
        if (t < 0 || t >= vocab)
            bad_input("prompt token id {} is outside the vocabulary of {}", t, vocab);
    if (static_cast<int64_t>(prompt.size()) >= max_model_len_)
        bad_input("the prompt has {} tokens; this model's maximum context is {} tokens",
                  prompt.size(), max_model_len_);
    if (p.temperature < 0) bad_input("temperature {} must be at least 0", p.temperature);
    if (!(p.top_p > 0 && p.top_p <= 1)) bad_input("top_p {} must be in (0, 1]", p.top_p);
    if (p.top_k < -1) bad_input("top_k {} must be -1, 0 or positive", p.top_k);
    if (p.min_p < 0 || p.min_p > 1) bad_input("min_p {} must be in [0, 1]", p.min_p);
    if (p.repetition_penalty <= 0)
        bad_input("repetition_penalty {} must be positive", p.repetition_penalty);
    if (p.presence_penalty < -2 || p.presence_penalty > 2)
        bad_input("presence_penalty {} must be in [-2, 2]", p.presence_penalty);
    if (p.frequency_penalty < -2 || p.frequency_penalty > 2)
        bad_input("frequency_penalty {} must be in [-2, 2]", p.frequency_penalty);
    if (p.max_tokens < 1) bad_input("max_tokens {} must be at least 1", p.max_tokens);
    if (p.min_tokens < 0 || p.min_tokens > p.max_tokens)
        bad_input("min_tokens {} must be in [0, max_tokens]", p.min_tokens);
    if (p.top_logprobs > kMaxTopLogprobs)
        bad_input("top_logprobs {} must be at most {}", p.top_logprobs, kMaxTopLogprobs);
    if (p.prompt_logprobs > kMaxTopLogprobs)
        bad_input("prompt_logprobs {} must be at most {}", p.prompt_logprobs, kMaxTopLogprobs);
    for (const auto& [t, b] : p.logit_bias)
        if (t < 0 || t >= vocab) bad_input("logit_bias names token {} outside the vocabulary", t);
    for (TokenId t : p.stop_token_ids)
        if (t < 0 || t >= vocab) bad_input("stop_token_ids has {} outside the vocabulary", t);
    for (TokenId t : p.forced_tokens)
        if (t < 0 || t >= vocab) bad_input("forced token {} is outside the vocabulary", t);

    auto seq = std::make_unique<Sequence>();
    seq->tokens = prompt;
    seq->prompt_len = static_cast<int64_t>(prompt.size());
    seq->params = p;
    seq->processor = TokenProcessor(p);
    seq->seed = p.seed ? *p.seed : std::random_device{}() * 0x100000001ull + std::random_device{}();
    if (!p.ignore_eos) seq->stop_ids = config_.eos_ids;
    seq->stop_ids.insert(seq->stop_ids.end(), p.stop_token_ids.begin(), p.stop_token_ids.end());
    std::shared_ptr<RequestHandle> handle;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        seq->id = next_id_++;
        handle = std::make_shared<RequestHandle>(seq->id);
        seq->handle = handle;
        pending_.push_back(std::move(seq));
    }
    cv_.notify_all();
    return handle;
}

void Engine::take_submissions() {
    std::vector<std::unique_ptr<Sequence>> incoming;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        incoming.swap(pending_);
    }
    for (auto& s : incoming) scheduler_.add(std::move(s));
}

void Engine::finish(Sequence* seq, FinishReason reason, RequestOutput out) {
    out.finished = true;
    out.reason = reason;
    out.prompt_tokens = seq->prompt_len;
    out.cached_tokens = seq->cached_tokens;
    out.completion_tokens = seq->num_output();
    auto handle = seq->handle;
    std::unique_ptr<Sequence> owned = scheduler_.remove(seq);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.prompt_tokens += owned->prompt_len;
        stats_.cached_tokens += owned->cached_tokens;
    }
    handle->push(std::move(out));
}

// Speculation: every decoding sequence that may take a draft gets one from the drafter (maybe
// empty). Not while forced tokens remain (they are not sampled; unless draft_forced), nor while
// it rests after drafts that kept missing (next_draft_rest), nor past the context.
void Engine::propose_drafts() {
    if (!drafter_) return;
    std::vector<Sequence*> seqs;
    for (Sequence* seq : scheduler_.all()) {
        seq->draft.clear();
        if (!seq->decoding()) continue;
        if (!config_.draft_forced && seq->processor.forced(seq->num_output()) >= 0) continue;
        if (seq->handle && seq->handle->paused()) continue;
        if (seq->draft_rest > 0) {  // its drafts kept missing (next_draft_rest)
            --seq->draft_rest;
            continue;
        }
        if (seq->draft_limit == 0) seq->draft_limit = config_.speculative.num_speculative_tokens;
        seqs.push_back(seq);
    }
    if (seqs.empty()) return;
    try {
        drafter_->propose(seqs);
    } catch (const std::exception& e) {  // a drafter's forward pass: the step goes on without
        log::warn("the drafter failed: {}; this step has no drafts", e.what());
        for (Sequence* seq : seqs) seq->draft.clear();
    }
    for (Sequence* seq : seqs) {
        // Every token it may take (k + 1) within the context.
        const int64_t room = max_model_len_ - static_cast<int64_t>(seq->tokens.size()) - 1;
        if (static_cast<int64_t>(seq->draft.size()) > room)
            seq->draft.resize(static_cast<size_t>(std::max<int64_t>(0, room)));
    }
}

bool Engine::step() {
    take_submissions();
    for (Sequence* seq : scheduler_.all())
        if (seq->handle->cancelled()) finish(seq, FinishReason::Abort, {});
    propose_drafts();
    std::vector<ScheduledSeq> batch = scheduler_.schedule();
    stalled_ = false;
    if (batch.empty()) {
        if (config_.check_invariants) blocks_.check_invariants();
        publish_stats({}, false);       // cancelled requests may have freed blocks
        stalled_ = !scheduler_.idle();  // every sequence left is paused
        return stalled_;
    }

    const auto step_start = std::chrono::steady_clock::now();
    StepLimits limits;
    limits.vocab = workers_.config().vocab_size;
    limits.max_model_len = max_model_len_;
    limits.block_size = blocks_.block_size();
    limits.backend_samples = workers_.backend_samples();
    limits.observe_logits = static_cast<bool>(config_.logits_observer);
    const bool hidden = drafter_ && drafter_->wants_hidden();
    // Drafts padded to one length where steps replay graphs (a drafter reading hidden states
    // runs its steps op by op anyway).
    limits.pad_drafts = !hidden && drafter_ &&
                        (config_.pad_drafts == PadDrafts::On ||
                         (config_.pad_drafts == PadDrafts::Auto && limits.backend_samples));
    limits.max_rows = config_.scheduler.max_num_batched_tokens;
    limits.free_blocks = [this] { return blocks_.num_free(); };
    limits.grow = [this](Sequence& s, int64_t tokens) { return blocks_.grow(s.blocks, tokens); };
    BuiltStep built = build_step(batch, limits);
    built.input.eager = built.input.eager || hidden;
    bool decode_only = true;
    for (const ScheduledSeq& s : batch)
        decode_only = decode_only && s.sample && s.num_tokens == 1 + s.draft + s.pad;
    try {
        run_step(workers_, built, results_, hidden, hidden_layers_);
    } catch (const std::exception& e) {
        log::warn("a forward step failed: {}; its {} requests end with an error", e.what(),
                  batch.size());
        for (const ScheduledSeq& s : batch) {
            s.seq->draft.clear();
            RequestOutput out;
            out.error = e.what();
            finish(s.seq, FinishReason::Error, std::move(out));
        }
        return true;
    }

    UpdateLimits update;
    update.vocab = limits.vocab;
    update.max_model_len = max_model_len_;
    update.max_draft = drafter_ ? config_.speculative.num_speculative_tokens : 0;
    update.rest_after_misses = config_.speculative.rest_after_misses;
    update.backend_samples = limits.backend_samples;
    update.observer = &config_.logits_observer;
    StepCounts counts;
    std::vector<SeqOutcome> outcomes =
        update_after_step(batch, built, results_, blocks_, update, counts);
    if (drafter_) {
        // A drafter that fails costs its drafts, not the requests: they go on without.
        try {
            drafter_->after_step(batch, built, results_.hidden, outcomes);
        } catch (const std::exception& e) {
            log::warn("the drafter's step failed: {}; the next step has no drafts", e.what());
        }
    }
    for (SeqOutcome& o : outcomes) {
        if (o.finish != FinishReason::None)
            finish(o.seq, o.finish, std::move(o.out));
        else
            o.seq->handle->push(std::move(o.out));
    }
    if (config_.check_invariants) blocks_.check_invariants();
    if (decode_only) {
        counts.decode_sequences = static_cast<int64_t>(batch.size());
        counts.decode_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    }
    publish_stats(counts, true);
    return true;
}

void Engine::publish_stats(const StepCounts& counts, bool ran_step) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ran_step) ++stats_.steps;
    stats_.generated_tokens += counts.generated;
    stats_.spec_drafts += counts.drafts;
    stats_.spec_draft_tokens += counts.draft_tokens;
    stats_.spec_accepted_tokens += counts.accepted_tokens;
    stats_.spec_pad_rows += counts.pad_rows;
    if (counts.decode_sequences > 0) {
        ++stats_.decode_steps;
        stats_.decode_step_sequences += counts.decode_sequences;
        stats_.decode_step_seconds += counts.decode_seconds;
    }
    stats_.preemptions = scheduler_.preemptions();
    stats_.running = scheduler_.num_running();
    stats_.waiting = scheduler_.num_waiting();
    stats_.blocks_used = blocks_.num_used();
}

EngineStats Engine::stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    EngineStats s = stats_;
    s.waiting += static_cast<int64_t>(pending_.size());
    return s;
}

void Engine::start() {
    thread_ = std::thread([this] { loop(); });
}

void Engine::loop() {
    bool worked = false;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            const auto has_work = [&] { return stop_ || !pending_.empty() || !scheduler_.idle(); };
            if (worked && !has_work()) {
                // Going idle after a burst: hand the burst's freed activation and request memory
                // back to the system, so a server's resident size follows its load.
                lock.unlock();
                release_free_memory();
                worked = false;
                lock.lock();
            }
            if (stalled_)  // only paused sequences: look again soon, not at once
                cv_.wait_for(lock, std::chrono::milliseconds(5),
                             [&] { return stop_ || !pending_.empty(); });
            else
                cv_.wait(lock, has_work);
            if (stop_) return;
        }
        step();
        worked = true;
    }
}

}  // namespace myriad
