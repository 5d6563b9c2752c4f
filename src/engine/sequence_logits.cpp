#include "engine/sequence_logits.h"

#include <algorithm>

#include "ops/step_input.h"

namespace myriad {

std::vector<float> sequence_logits(WorkerGroup& workers, const std::vector<TokenId>& tokens,
                                   int64_t past, int64_t chunk) {
    const int64_t vocab = workers.config().vocab_size;
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (chunk <= 0) chunk = n;
    std::vector<float> out(static_cast<size_t>(n * vocab));
    for (int64_t b = 0; b < n; b += chunk) {
        const int64_t e = std::min(n, b + chunk);
        std::vector<TokenId> part(tokens.begin() + b, tokens.begin() + e);
        std::vector<int32_t> rows;
        for (int64_t i = 0; i < e - b; ++i) rows.push_back(static_cast<int32_t>(i));
        workers.step(single_sequence_step(part, past + b, workers.options().kv_block_size, rows),
                     out.data() + b * vocab);
    }
    return out;
}

}  // namespace myriad
