#pragma once

#include <cstdint>
#include <vector>

#include "engine/worker_group.h"

namespace myriad {

// The logits of every position of one sequence run through the model alone (evaluation,
// calibration, tests): `tokens` after `past` cached tokens, fed in steps of `chunk` tokens (0: one
// step; 1: token by token, as decoding feeds them); [tokens, vocab]. The sequence's cache is
// blocks 0, 1, 2, ... (single_sequence_step), so the workers need enough KV blocks for
// past + tokens.
std::vector<float> sequence_logits(WorkerGroup& workers, const std::vector<TokenId>& tokens,
                                   int64_t past = 0, int64_t chunk = 0);

}  // namespace myriad
