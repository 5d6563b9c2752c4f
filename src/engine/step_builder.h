// The step builder: the scheduled sequences become the step's StepInput (token rows, positions,
// KV slots, block tables, logit rows, prompt-logprob spans) and its sampling input (each logit
// row's SampleRow, logit edits and structured-output mask). A decoding sequence with a draft of
// k tokens is k + 1 rows at consecutive positions (its last token, then the draft), each a logit
// row sampled as the plain decode of that position would be: edits and draw from the output as
// it would stand there, the mask of the grammar state after the draft's earlier tokens (the
// draft is cut where the grammar refuses a token).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/scheduler.h"
#include "ops/step_input.h"
#include "ops/step_sampling.h"

namespace myriad {

struct StepLimits {
    int64_t vocab = 0;
    int64_t max_model_len = 0;
    int64_t block_size = 0;        // tokens per KV block
    bool backend_samples = false;  // the workers choose tokens on their device
    bool observe_logits = false;   // an observer wants every sampled row's logits
    // Pad the drafts of a step whose sequences all decode but verify drafts of different
    // lengths (or none) to the longest, so the step has one shape and replays a captured graph
    // (CUDA; a step of mixed lengths runs op by op), where the step stays within max_rows rows
    // and free_blocks() blocks cover the padding's KV; grow gives a sequence's table the blocks
    // of that many tokens.
    bool pad_drafts = false;
    int64_t max_rows = 0;
    std::function<int64_t()> free_blocks;
    std::function<bool(Sequence&, int64_t)> grow;
};

struct BuiltStep {
    StepInput input;
    // Masks for every masked logit row; SampleRows and edits only when the backend samples.
    StepSampling sampling;
    std::vector<int32_t> row_mask;  // per logit row: its mask in sampling.masks, -1 none
    // Per sampled sequence (batch order): its first logit row.
    std::vector<int32_t> first_row;
    std::vector<std::pair<Sequence*, int64_t>> logprob_seqs;  // prompt logprob rows per sequence
};

// Builds the step of `batch`, cutting drafts the grammar refuses (ScheduledSeq::draft,
// num_tokens and the sequence's draft shrink with them), then padding drafts where
// limits.pad_drafts asks (ScheduledSeq::pad; the padding rows repeat the sequence's last token,
// are sampled from no mask and never reach its output).
BuiltStep build_step(std::vector<ScheduledSeq>& batch, const StepLimits& limits);

// The output a sequence would have after its first `i` draft tokens.
std::vector<TokenId> output_with_draft(const Sequence& seq, int64_t i);

}  // namespace myriad
