// Layout: who holds what across the ranks of one forward pass. Every rank is one tensor-parallel
// rank of attention (heads split evenly) and of the dense MLP and shared experts (intermediate
// columns split); the routed experts are either tensor-parallel too (each expert's intermediate
// dimension split) or, with expert parallelism, whole experts placed on ranks in contiguous
// blocks. Both MoE layouts end in the same all-reduce. The vocabulary (embedding, lm_head) is
// split by rows. The loader, the planner, the forward pass and the kernel choices ask this
// class; nothing else computes a shard. (Room for decode context parallelism: a dcp size that
// stripes the latent cache by token would be one more field here.)
#pragma once

#include <cstdint>
#include <string>

namespace myriad {

enum class ShardKind : uint8_t {
    Replicated,  // every rank holds all of it
    Rows,        // output features split evenly (column-parallel linear, vocabulary)
    Cols,        // input features split evenly (row-parallel linear; partial sums reduced)
};

// Half-open range [begin, end).
struct Slice {
    int64_t begin = 0, end = 0;
    int64_t size() const { return end - begin; }
    bool operator==(const Slice&) const = default;
};

// The part of a [rows, cols] tensor one rank holds; `held` false for a routed expert placed on
// another rank (the rank holds none of it).
struct TensorShard {
    bool held = true;
    Slice rows, cols;
};

class Layout {
  public:
    Layout() = default;  // one rank
    // `tp` ranks, this one `rank`; expert_parallel places whole routed experts per rank.
    Layout(int tp, bool expert_parallel, int rank = 0);

    int tp() const { return tp_; }
    int world() const { return tp_; }
    int rank() const { return rank_; }
    bool expert_parallel() const { return ep_ > 1; }
    // Ranks the routed experts are spread over (1: every rank holds a slice of every expert).
    int ep() const { return ep_; }
    Layout of_rank(int rank) const { return Layout(tp_, ep_ > 1, rank); }

    // This rank's even share of `n` (rows or columns split over tp).
    Slice part(int64_t n) const;
    int64_t local_heads(int64_t heads) const { return heads / tp_; }
    Slice vocab(int64_t vocab_size) const { return part(vocab_size); }
    // The routed experts this rank holds (all of them, sliced, without expert parallelism).
    Slice experts(int64_t n_experts) const;
    bool holds_expert(int64_t expert, int64_t n_experts) const;
    // A tensor of [rows, cols] sharded by `kind`; `expert` >= 0 for routed experts' matrices.
    TensorShard shard(ShardKind kind, int64_t rows, int64_t cols, int64_t expert = -1,
                      int64_t n_experts = 0) const;
    // Bytes one rank holds of a tensor of `bytes` (planner): a routed expert's share under
    // expert parallelism is its bytes times the fraction of experts on the fullest rank.
    int64_t rank_bytes(int64_t bytes, ShardKind kind, bool routed_expert, int64_t n_experts) const;
    // The same `kind` as the routed experts' matrices are actually cut (Replicated = whole).
    ShardKind expert_kind(ShardKind kind) const { return ep_ > 1 ? ShardKind::Replicated : kind; }

    // "TP=4" or "TP=4+EP" (the planner's and the logs' name for it).
    std::string label() const;

  private:
    int tp_ = 1, ep_ = 1, rank_ = 0;
};

}  // namespace myriad
