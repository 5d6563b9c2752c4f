#include "parallel/layout.h"

#include <fmt/format.h>

#include "util/error.h"

namespace myriad {

Layout::Layout(int tp, bool expert_parallel, int rank)
    : tp_(tp), ep_(expert_parallel ? tp : 1), rank_(rank) {
    MYRIAD_CHECK(tp >= 1 && rank >= 0 && rank < tp, "layout: rank {} of {} ranks", rank, tp);
}

Slice Layout::part(int64_t n) const {
    const int64_t each = n / tp_;
    return {each * rank_, each * (rank_ + 1)};
}

Slice Layout::experts(int64_t n) const {
    if (ep_ == 1) return {0, n};
    const int64_t each = (n + ep_ - 1) / ep_;
    const int64_t begin = std::min(n, each * rank_);
    return {begin, std::min(n, begin + each)};
}

bool Layout::holds_expert(int64_t e, int64_t n) const {
    const Slice s = experts(n);
    return e >= s.begin && e < s.end;
}

TensorShard Layout::shard(ShardKind kind, int64_t rows, int64_t cols, int64_t expert,
                          int64_t n_experts) const {
    TensorShard s{true, {0, rows}, {0, cols}};
    if (expert >= 0 && ep_ > 1) {
        s.held = holds_expert(expert, n_experts);
        if (!s.held) s.rows = s.cols = {0, 0};
        return s;
    }
    if (kind == ShardKind::Rows) s.rows = part(rows);
    if (kind == ShardKind::Cols) s.cols = part(cols);
    return s;
}

int64_t Layout::rank_bytes(int64_t bytes, ShardKind kind, bool routed_expert,
                           int64_t n_experts) const {
    if (routed_expert && ep_ > 1) {
        const int64_t most = (n_experts + ep_ - 1) / ep_;  // rank 0 holds a full block
        return n_experts > 0 ? bytes * most / n_experts : bytes;
    }
    return kind == ShardKind::Replicated ? bytes : (bytes + tp_ - 1) / tp_;
}

std::string Layout::label() const {
    return ep_ > 1 ? fmt::format("TP={}+EP", tp_) : fmt::format("TP={}", tp_);
}

}  // namespace myriad
