// The post-step update: what a step's logit rows mean for each of its sequences. A prefill
// chunk only advances; a sampled sequence takes 1 to k + 1 tokens. With a draft of k tokens,
// row i's token (sampled exactly as a plain decode at that position would be: the same logits,
// edits, mask and draw) is taken, and the next row is looked at while that token equals draft
// token i: greedy output is the output without a draft, and for the one-hot draft of a
// deterministic drafter this is rejection sampling (the draft token is kept with probability
// p(x); otherwise the token is drawn from p without x, renormalised), so sampling's
// distribution is unchanged too. Every token goes through the token processor (structured
// output) and the stop checks (stop ids, the grammar's end, max_tokens, the context), which cut
// the run where they end the sequence. The KV of rejected draft tokens is dropped: the
// sequence's computed length covers accepted tokens only, blocks past them go back to the
// block manager, and only blocks of accepted tokens reach the prefix cache.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/block_manager.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/step_builder.h"
#include "engine/step_run.h"

namespace myriad {

struct SeqOutcome {
    Sequence* seq = nullptr;
    RequestOutput out;  // its new tokens (maybe none: a prefill chunk's sequence is not listed)
    FinishReason finish = FinishReason::None;  // None: it goes on
};

struct StepCounts {
    int64_t generated = 0;
    int64_t drafts = 0;           // sequences that verified a draft
    int64_t draft_tokens = 0;     // draft tokens verified
    int64_t accepted_tokens = 0;  // of those, the ones the model agreed with
    int64_t pad_rows = 0;         // padding rows (ScheduledSeq::pad) run and dropped
    // Set by the engine for a step in which every sequence decoded: its sequences and seconds.
    int64_t decode_sequences = 0;
    double decode_seconds = 0;
};

struct UpdateLimits {
    int64_t vocab = 0;
    int64_t max_model_len = 0;
    int64_t max_draft = 0;          // --num-speculative-tokens (0: no speculation)
    int64_t rest_after_misses = 0;  // SpeculativeConfig::rest_after_misses
    bool backend_samples = false;
    const std::function<void(uint64_t, int64_t, const float*)>* observer = nullptr;
};

// Advances every sequence of `batch` past the step, appends the tokens each takes and returns
// one outcome per sampled sequence (batch order); `counts` adds the step's.
std::vector<SeqOutcome> update_after_step(const std::vector<ScheduledSeq>& batch,
                                          const BuiltStep& step, StepResults& results,
                                          BlockManager& blocks, const UpdateLimits& limits,
                                          StepCounts& counts);

}  // namespace myriad
