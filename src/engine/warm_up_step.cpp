#include "engine/warm_up_step.h"

#include <algorithm>
#include <vector>

namespace myriad {

namespace {

// Blocks holding the new tokens of a prefill of q tokens at context ctx (the earlier context
// shares the first of them).
int64_t new_blocks(int64_t q, int64_t ctx, int64_t bs) {
    return (ctx + bs - 1) / bs - (ctx - q) / bs;
}

struct Prefill {
    int64_t q = 0, ctx = 0;
};

// `tokens` over `k` prefills, their contexts filled up to `target` (at most max_len each).
std::vector<Prefill> spread(int64_t tokens, int64_t k, int64_t target, int64_t max_len) {
    std::vector<Prefill> p(static_cast<size_t>(k));
    int64_t extra = std::max<int64_t>(0, target - tokens);
    for (int64_t i = 0; i < k; ++i) {
        Prefill& s = p[static_cast<size_t>(i)];
        s.q = tokens / k + (i + 1 == k ? tokens % k : 0);
        const int64_t add = std::min(extra, max_len - s.q);
        s.ctx = s.q + add;
        extra -= add;
    }
    return p;
}

}  // namespace

StepInput warm_up_step(const WarmUpLimits& w) {
    const int64_t bs = w.block_size;
    const int64_t tokens = std::min({w.max_num_batched_tokens, w.kv_blocks * bs, w.max_model_len});
    StepInput st;
    if (tokens < 1 || w.max_num_seqs < 1) return st;
    // Prefill sequences: as many as it takes for contexts of max_model_len to reach the bound,
    // fewer (then fewer decodes) if the cache cannot hold the blocks they write.
    const int64_t bound = std::max<int64_t>(w.naive_context_tokens, 1);
    const int64_t k_most = std::max<int64_t>(
        1, std::min({(bound + w.max_model_len - 1) / w.max_model_len, tokens / 2, w.max_num_seqs}));
    int64_t decodes = 0;
    std::vector<Prefill> prefills;
    for (int64_t k = k_most; k >= 1 && prefills.empty(); --k) {
        for (decodes = std::max<int64_t>(0, std::min(w.max_num_seqs - k, tokens - 2 * k));
             decodes >= 0; --decodes) {
            auto p = spread(tokens - decodes, k, bound, w.max_model_len);
            int64_t blocks = decodes;  // a block per decode sequence
            for (const Prefill& x : p) blocks += new_blocks(x.q, x.ctx, bs);
            if (blocks <= w.kv_blocks) {
                prefills = std::move(p);
                break;
            }
        }
    }
    if (prefills.empty()) {  // (a cache of a few blocks) one prefill of its own context
        decodes = 0;
        prefills = {Prefill{tokens, tokens}};
    }

    BlockId next = 0;
    for (int64_t i = 0; i < decodes; ++i) {
        SeqSlice s;
        s.q_begin = i;
        s.q_len = 1;
        s.ctx_len = 1;
        s.block_table.push_back(next);
        st.token_ids.push_back(0);
        st.positions.push_back(0);
        st.slots.push_back(int64_t{next++} * bs);
        st.logit_rows.push_back(static_cast<int32_t>(i));
        st.seqs.push_back(std::move(s));
    }
    for (const Prefill& p : prefills) {
        SeqSlice s;
        s.q_begin = st.num_tokens();
        s.q_len = p.q;
        s.ctx_len = p.ctx;
        const int64_t first = (p.ctx - p.q) / bs;  // the first block a new token is written to
        s.block_table.assign(static_cast<size_t>(first), next);
        for (int64_t b = first; b * bs < p.ctx; ++b) s.block_table.push_back(next++);
        for (int64_t pos = p.ctx - p.q; pos < p.ctx; ++pos) {
            st.token_ids.push_back(0);
            st.positions.push_back(static_cast<int32_t>(pos));
            st.slots.push_back(int64_t{s.block_table[static_cast<size_t>(pos / bs)]} * bs +
                               pos % bs);
        }
        st.logit_rows.push_back(static_cast<int32_t>(st.num_tokens() - 1));
        st.seqs.push_back(std::move(s));
    }
    // Block tables as long as real steps' can be: each sequence's up to a max_model_len context
    // (and a block ahead), the last one's also for the sequences this step lacks.
    const int64_t per_seq = (w.max_model_len + bs - 1) / bs + 1;
    const int64_t missing =
        std::max<int64_t>(0, w.max_num_seqs - static_cast<int64_t>(st.seqs.size()));
    for (size_t i = 0; i < st.seqs.size(); ++i) {
        std::vector<BlockId>& t = st.seqs[i].block_table;
        const int64_t want = per_seq * (i + 1 == st.seqs.size() ? 1 + missing : 1);
        if (static_cast<int64_t>(t.size()) < want) t.resize(static_cast<size_t>(want), t.back());
    }
    return st;
}

}  // namespace myriad
