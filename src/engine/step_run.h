// The workers' run of a built step: every rank runs the forward pass on its shard; rank 0's
// logit rows (or, where the backend samples, the tokens it chose and the host rows' logits)
// and the prompt-logprob rows come back.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/step_builder.h"
#include "engine/worker_group.h"
#include "ops/logprob_rows.h"

namespace myriad {

struct StepResults {
    std::vector<float> logits;     // [logit rows, vocab]
    std::vector<int32_t> sampled;  // per logit row: the backend's token, -1 where it chose none
    LogprobRows prompt_logprobs;
    std::vector<float> hidden;  // [T, hidden] before the final norm, when asked for (else empty);
                                // with layers, [T, layers x hidden]: each row's layer inputs
    std::vector<float> layer_major;  // the workers' [layers, T, hidden], reused
};

// Runs `step` on the workers into `out` (its buffers reused from step to step), every row's hidden
// state too when `hidden` (a step marked eager): before the final norm, or with `layers` the
// inputs of those target layers side by side (an EAGLE3 drafter's); throws what the forward pass
// threw.
void run_step(WorkerGroup& workers, const BuiltStep& step, StepResults& out, bool hidden = false,
              const std::vector<int64_t>& layers = {});

}  // namespace myriad
