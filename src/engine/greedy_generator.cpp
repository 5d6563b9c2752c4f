#include "engine/greedy_generator.h"

#include <algorithm>
#include <chrono>

#include "util/error.h"

namespace myriad {

StepInput single_sequence_step(const std::vector<TokenId>& tokens, int64_t past,
                               int64_t block_size, std::vector<int32_t> logit_rows) {
    StepInput st;
    st.token_ids = tokens;
    const int64_t n = static_cast<int64_t>(tokens.size());
    SeqSlice seq;
    seq.q_begin = 0;
    seq.q_len = n;
    seq.ctx_len = past + n;
    for (int64_t b = 0; b * block_size < seq.ctx_len; ++b)
        seq.block_table.push_back(static_cast<BlockId>(b));
    for (int64_t i = 0; i < n; ++i) {
        st.positions.push_back(static_cast<int32_t>(past + i));
        st.slots.push_back(past + i);  // contiguous blocks: slot = position
    }
    st.seqs.push_back(std::move(seq));
    st.logit_rows = std::move(logit_rows);
    return st;
}

GreedyResult generate_greedy(WorkerGroup& workers, const std::vector<TokenId>& prompt,
                             const GreedyOptions& opt) {
    using Clock = std::chrono::steady_clock;
    const ModelConfig& c = workers.config();
    const int64_t bs = workers.options().kv_block_size;
    const int64_t capacity = workers.options().kv_blocks * bs;
    if (prompt.empty()) bad_input("the prompt is empty: give at least one token id");
    const int64_t total = static_cast<int64_t>(prompt.size()) + opt.max_tokens;
    if (total > capacity)
        bad_input("prompt of {} tokens + {} new tokens exceeds the KV cache of {} tokens",
                  prompt.size(), opt.max_tokens, capacity);
    if (total > c.max_position_embeddings)
        bad_input("prompt of {} tokens + {} new tokens exceeds max_position_embeddings {}",
                  prompt.size(), opt.max_tokens, c.max_position_embeddings);
    GreedyResult res;
    std::vector<float> logits(static_cast<size_t>(c.vocab_size));
    auto argmax = [&] {
        return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    };
    auto t0 = Clock::now();
    const int64_t n = static_cast<int64_t>(prompt.size());
    const int64_t chunk = opt.prefill_chunk > 0 ? opt.prefill_chunk : n;
    for (int64_t begin = 0; begin < n; begin += chunk) {
        int64_t end = std::min(n, begin + chunk);
        std::vector<TokenId> part(prompt.begin() + begin, prompt.begin() + end);
        std::vector<int32_t> rows;
        if (end == n) rows.push_back(static_cast<int32_t>(end - begin - 1));
        StepInput st = single_sequence_step(part, begin, bs, rows);
        workers.step(st, logits.data());
    }
    auto t1 = Clock::now();
    res.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
    int64_t past = n;
    while (static_cast<int64_t>(res.tokens.size()) < opt.max_tokens) {
        TokenId next = argmax();
        res.tokens.push_back(next);
        if (std::find(opt.stop_ids.begin(), opt.stop_ids.end(), next) != opt.stop_ids.end()) {
            res.stopped = true;
            break;
        }
        if (static_cast<int64_t>(res.tokens.size()) == opt.max_tokens) break;
        StepInput st = single_sequence_step({next}, past, bs, {0});
        workers.step(st, logits.data());
        ++past;
    }
    res.decode_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
    return res;
}

}  // namespace myriad
