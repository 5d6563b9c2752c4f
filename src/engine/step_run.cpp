#include "engine/step_run.h"

#include <algorithm>

namespace myriad {

void run_step(WorkerGroup& workers, const BuiltStep& step, StepResults& out, bool hidden,
              const std::vector<int64_t>& layers) {
    const size_t rows = step.input.logit_rows.size();
    out.logits.resize(rows * static_cast<size_t>(workers.config().vocab_size));
    out.sampled.assign(rows, -1);
    out.prompt_logprobs = LogprobRows{};
    const bool on_backend = workers.backend_samples();
    const size_t T = static_cast<size_t>(step.input.num_tokens());
    const size_t H = static_cast<size_t>(workers.config().hidden_size);
    if (hidden && !layers.empty()) {
        const size_t n = layers.size();
        out.layer_major.resize(n * T * H);
        out.hidden.resize(n * T * H);
        LayerInputs in{layers, out.layer_major.data()};
        workers.step(step.input, out.logits.data(), on_backend ? &step.sampling : nullptr,
                     out.sampled.data(), &out.prompt_logprobs, nullptr, &in);
        for (size_t r = 0; r < T; ++r)  // row r: layer 0's state, layer 1's, ...
            for (size_t i = 0; i < n; ++i)
                std::copy_n(out.layer_major.begin() + static_cast<std::ptrdiff_t>((i * T + r) * H),
                            H, out.hidden.begin() + static_cast<std::ptrdiff_t>((r * n + i) * H));
        return;
    }
    out.hidden.resize(hidden ? T * H : 0);
    workers.step(step.input, out.logits.data(), on_backend ? &step.sampling : nullptr,
                 out.sampled.data(), &out.prompt_logprobs, hidden ? out.hidden.data() : nullptr);
}

}  // namespace myriad
