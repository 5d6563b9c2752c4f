#include "engine/step_run.h"

namespace myriad {

void run_step(WorkerGroup& workers, const BuiltStep& step, StepResults& out, bool hidden) {
    const size_t rows = step.input.logit_rows.size();
    out.logits.resize(rows * static_cast<size_t>(workers.config().vocab_size));
    out.sampled.assign(rows, -1);
    out.prompt_logprobs = LogprobRows{};
    const bool on_backend = workers.backend_samples();
    out.hidden.resize(
        hidden ? static_cast<size_t>(step.input.num_tokens() * workers.config().hidden_size) : 0);
    workers.step(step.input, out.logits.data(), on_backend ? &step.sampling : nullptr,
                 out.sampled.data(), &out.prompt_logprobs, hidden ? out.hidden.data() : nullptr);
}

}  // namespace myriad
