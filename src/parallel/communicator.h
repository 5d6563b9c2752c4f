// Communicator: collective operations across tensor-parallel ranks. Every rank calls each
// collective in the same order; each call returns when its result is in place on this rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "parallel/rank_barrier.h"
#include "util/tensor.h"

namespace myriad {

class Communicator {
  public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int world() const = 0;
    // Sums `t` (F32) element-wise over all ranks, in place; every rank gets the same result.
    virtual void all_reduce_sum(Tensor t) = 0;
    // The reduction that ends a sub-layer fused with what follows it: sums y [T, D] over ranks,
    // adds the sum to the residual h [T, D], then, where `norm` has data (D values, F32 or BF16),
    // writes x = rmsnorm(h) * norm with eps. False where this communicator has no fused form for
    // the call (nothing done): the caller then runs all_reduce_sum and its ops' add_rmsnorm
    // (model/residual_reduce.h), which is what a true return equals.
    virtual bool all_reduce_add_rmsnorm(Tensor y, Tensor h, Tensor norm, float eps, Tensor x) {
        (void)y, (void)h, (void)norm, (void)eps, (void)x;
        return false;
    }
    // Concatenates each rank's `in` along a new outermost axis in rank order: out = [world, *in].
    virtual void all_gather(Tensor in, Tensor out) = 0;
    // Places each rank's `in` [rows, cols] side by side in rank order: out = [rows, world * cols]
    // (the vocabulary slices of the logits, gathered into whole rows).
    virtual void all_gather_columns(Tensor in, Tensor out) = 0;
    // Copies `bytes` of root's `data` to every rank's `data`.
    virtual void broadcast(void* data, size_t bytes, int root) = 0;
    virtual void barrier() = 0;
    // Whether the collectives only enqueue work on the rank's stream (no host wait), so that a
    // CUDA graph can record them.
    virtual bool graph_safe() const { return false; }
    // After a step: throws if a collective of the step failed on the device (a wait past its
    // bound), naming the rank, the op and what it waited for.
    virtual void check_step() {}
    // The bytes of every gather's result on this rank so far (all_gather, all_gather_columns):
    // what the logits of the steps cost to cross (tests count it).
    int64_t gathered_bytes() const { return gathered_bytes_; }

  protected:
    void count_gathered(const Tensor& out) {
        gathered_bytes_ += static_cast<int64_t>(out.nbytes());
    }

  private:
    int64_t gathered_bytes_ = 0;
};

// What the ranks of one group share (one per group, then a communicator per rank): the meeting
// point, which the owner aborts when a rank fails and resets once every rank left its step.
class CommGroup {
  public:
    virtual ~CommGroup() = default;
    virtual RankBarrier& barrier() = 0;
    // A rank failed: every rank waiting in a collective (on the host, or on the device where the
    // library can abort its kernels) stops and throws.
    virtual void abort(const std::string& why) { barrier().abort(why); }
    // What the group measured at start for its all-reduce: the bytes from which two-shot runs
    // (-1: one-shot at every size) and the line that says so; empty when nothing was measured.
    virtual int64_t measured_two_shot_from() const { return -1; }
    virtual std::string measured_all_reduce() const { return ""; }
    // The algorithm the group runs for an all-reduce of `bytes` in a recorded step and its time
    // as measured at start (interpolated between the measured sizes); us < 0: not measured.
    struct AllReduceEstimate {
        std::string algorithm;
        double us = -1;
    };
    virtual AllReduceEstimate all_reduce_estimate(size_t bytes) const {
        (void)bytes;
        return {};
    }
    // Rank 0's all-reduces so far (fused ones included), by message bytes: a step's are the
    // difference across it (counted where the calls are made: op by op, not in graph replays).
    virtual std::map<size_t, int64_t> all_reduce_counts() const { return {}; }
};

}  // namespace myriad
