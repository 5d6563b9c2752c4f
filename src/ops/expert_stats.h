// Distinct routed experts per MoE layer and step, counted while enabled (bench-model): the
// backend copies each layer's choices to the host, so only measurement steps turn it on.
#pragma once

#include <cstdint>

namespace myriad {

struct ExpertStats {
    bool enabled = false;
    int64_t layer_steps = 0;  // MoE layers run while enabled
    int64_t distinct = 0;     // distinct experts chosen, summed over those
    int64_t tokens = 0;       // tokens routed, summed over those
};

// The process's counters (one engine per process uses them). Inline, so the CUDA library and
// the CLI share one instance without a link-order dependency.
inline ExpertStats& expert_stats() {
    static ExpertStats stats;
    return stats;
}

}  // namespace myriad
