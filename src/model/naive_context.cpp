#include "model/naive_context.h"

#include <algorithm>

#include "util/error.h"

namespace myriad {

int64_t NaiveCall::tokens(const std::vector<SeqSlice>& seqs) const {
    if (pieced) return piece.size();
    int64_t n = 0;
    for (size_t s = seq_begin; s < seq_end; ++s) n += seqs[s].ctx_len;
    return n;
}

void plan_naive_calls(const std::vector<SeqSlice>& seqs, size_t first, int64_t limit,
                      std::vector<NaiveCall>& calls) {
    MYRIAD_CHECK(limit >= 1, "the naive form's context bound is {} tokens; it must be at least 1",
                 limit);
    calls.clear();
    size_t s = first;
    while (s < seqs.size()) {
        const int64_t ctx = seqs[s].ctx_len;
        if (ctx > limit) {
            for (int64_t c0 = 0; c0 < ctx; c0 += limit) {
                NaiveCall c;
                c.seq_begin = s;
                c.seq_end = s + 1;
                c.pieced = true;
                c.piece = {s, c0, std::min(ctx, c0 + limit)};
                calls.push_back(c);
            }
            ++s;
            continue;
        }
        NaiveCall c;
        c.seq_begin = s;
        int64_t sum = 0;
        while (s < seqs.size() && sum + seqs[s].ctx_len <= limit) sum += seqs[s++].ctx_len;
        c.seq_end = s;
        calls.push_back(c);
    }
}

}  // namespace myriad
