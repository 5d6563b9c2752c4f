#include "engine/step_update.h"

#include <algorithm>

#include "engine/drafter.h"
#include "engine/sampler.h"
#include "util/error.h"

namespace myriad {

namespace {

// Each sequence's prompt logprob rows, its own top N of the step's.
void take_prompt_logprobs(const BuiltStep& step, const LogprobRows& lp) {
    size_t lp_row = 0;
    for (const auto& [seq, n] : step.logprob_seqs) {
        const size_t top = static_cast<size_t>(seq->params.prompt_logprobs);
        for (int64_t i = 0; i < n; ++i, ++lp_row) {
            SampleResult r;
            r.token = step.input.logprob_targets[lp_row];
            r.logprob = lp.target[lp_row];
            const size_t at = lp_row * static_cast<size_t>(lp.top_n);
            for (size_t j = 0; j < top; ++j)
                if (lp.top_ids[at + j] >= 0) r.top.push_back({lp.top_ids[at + j], lp.top[at + j]});
            seq->prompt_logprobs.push_back(std::move(r));
        }
        seq->prompt_logprobs_done += n;
    }
}

}  // namespace

std::vector<SeqOutcome> update_after_step(const std::vector<ScheduledSeq>& batch,
                                          const BuiltStep& step, StepResults& results,
                                          BlockManager& blocks, const UpdateLimits& limits,
                                          StepCounts& counts) {
    take_prompt_logprobs(step, results.prompt_logprobs);
    const int64_t vocab = limits.vocab;
    const StepSampling& sampling = step.sampling;
    std::vector<SeqOutcome> outcomes;
    size_t sampled_seq = 0;
    for (const ScheduledSeq& s : batch) {
        Sequence& seq = *s.seq;
        const int64_t before = seq.num_computed;
        seq.num_computed += s.num_tokens;
        if (!s.sample) {
            blocks.register_full_blocks(seq.blocks, seq.tokens, seq.num_computed, seq.block_hashes);
            continue;
        }
        const size_t first = static_cast<size_t>(step.first_row[sampled_seq++]);
        const int64_t known = static_cast<int64_t>(seq.tokens.size());
        SeqOutcome o;
        o.seq = &seq;
        RequestOutput& out = o.out;
        for (int64_t i = 0; i <= s.draft; ++i) {
            const size_t row = first + static_cast<size_t>(i);
            float* logits = results.logits.data() + row * static_cast<size_t>(vocab);
            if (limits.observer && *limits.observer)
                (*limits.observer)(seq.id, before + s.num_tokens - 1 - s.draft - s.pad + i, logits);
            const int64_t index = seq.num_output();
            const TokenId forced = seq.processor.forced(index);
            const int32_t mask = step.row_mask[row];
            SampleResult r;
            if (limits.backend_samples && !sampling.rows[row].host)
                r.token = results.sampled[row];
            else
                r = forced >= 0
                        ? forced_token(logits, vocab, forced, seq.params)
                        : sample_token(logits, vocab, seq.params, seq.seed, seq.prompt(),
                                       seq.output(), seq.stop_ids,
                                       mask < 0 ? nullptr
                                                : sampling.masks.data() +
                                                      static_cast<size_t>(mask) *
                                                          static_cast<size_t>(sampling.mask_words));
            const TokenProcessor::Verdict verdict = seq.processor.accept(r.token, index);
            if (verdict == TokenProcessor::Verdict::Rejected) {
                out.error = fmt::format(
                    "token {} was chosen though the output grammar does not allow it (the token "
                    "mask was not applied)",
                    r.token);
                o.finish = FinishReason::Error;
                break;
            }
            seq.tokens.push_back(r.token);
            ++counts.generated;
            out.tokens.push_back(r.token);
            if (seq.params.top_logprobs >= 0) out.logprobs.push_back(r);
            if (seq.num_output() == 1 && seq.params.prompt_logprobs >= 0)
                out.prompt_logprobs = std::move(seq.prompt_logprobs);
            const bool stop =
                seq.num_output() > seq.params.min_tokens - 1 &&
                std::find(seq.stop_ids.begin(), seq.stop_ids.end(), r.token) != seq.stop_ids.end();
            if (stop) {
                out.stop_token = r.token;
                o.finish = FinishReason::Stop;
            } else if (verdict == TokenProcessor::Verdict::Complete) {
                o.finish = FinishReason::Stop;  // the grammar's document ended
            } else if (seq.num_output() >= seq.params.max_tokens ||
                       static_cast<int64_t>(seq.tokens.size()) >= limits.max_model_len) {
                o.finish = FinishReason::Length;
            }
            if (o.finish != FinishReason::None) break;
            if (i < s.draft && r.token != seq.draft[static_cast<size_t>(i)]) break;
        }
        if (s.draft > 0) {
            int64_t accepted = 0;
            while (accepted < s.draft &&
                   known + accepted < static_cast<int64_t>(seq.tokens.size()) &&
                   seq.tokens[static_cast<size_t>(known + accepted)] ==
                       seq.draft[static_cast<size_t>(accepted)])
                ++accepted;
            ++counts.drafts;
            counts.draft_tokens += s.draft;
            counts.accepted_tokens += accepted;
            seq.draft_limit =
                next_draft_limit(seq.draft_limit, s.draft, accepted, limits.max_draft);
            seq.draft_misses = accepted > 0 ? 0 : seq.draft_misses + 1;
            seq.draft_rest = next_draft_rest(seq.draft_misses, limits.rest_after_misses);
        }
        counts.pad_rows += s.pad;
        if (s.draft + s.pad > 0) {
            // The rejected tokens' (and the padding's) KV is not the sequence's: it covers its
            // tokens but the last.
            seq.num_computed =
                std::min(seq.num_computed, static_cast<int64_t>(seq.tokens.size()) - 1);
            if (o.finish == FinishReason::None)
                blocks.shrink(seq.blocks, static_cast<int64_t>(seq.tokens.size()));
        }
        seq.draft.clear();
        blocks.register_full_blocks(seq.blocks, seq.tokens, seq.num_computed, seq.block_hashes);
        out.prompt_tokens = seq.prompt_len;
        out.cached_tokens = seq.cached_tokens;
        out.completion_tokens = seq.num_output();
        outcomes.push_back(std::move(o));
    }
    return outcomes;
}

}  // namespace myriad
