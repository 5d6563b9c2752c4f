// ModelledCommunicator: one rank of a tensor-parallel group running alone, its collectives
// replaced by a wait of a given latency. `bench-model --tp 8 --rank R` times one rank's share of a
// model too big for one GPU (Kimi-K2.5 at TP 8: a rank holds ~69 GiB) against the all-reduce
// latency of a machine it does not run on. No other rank exists: a reduction leaves this rank's
// partial sum as it is and a gather places only this rank's part, so the numbers it computes are
// not the model's (timing only). It counts the collectives a step makes, from which bench-model
// projects the step at other latencies.
#pragma once

#include <cstdint>

#include "parallel/communicator.h"

namespace myriad {

class ModelledCommunicator : public Communicator {
  public:
    // Rank `rank` of `world`; each collective takes `wait_us` microseconds (0: none).
    ModelledCommunicator(int world, int rank, double wait_us);
    int rank() const override { return rank_; }
    int world() const override { return world_; }
    void all_reduce_sum(Tensor t) override;
    void all_gather(Tensor in, Tensor out) override;
    void all_gather_columns(Tensor in, Tensor out) override;
    void broadcast(void*, size_t, int) override {}
    void barrier() override {}

    double wait_us() const { return wait_us_; }
    // Collectives issued so far (a replayed CUDA graph issues none: count an op-by-op step).
    int64_t all_reduces() const { return all_reduces_; }
    int64_t gathers() const { return gathers_; }

  protected:
    // The modelled latency: on the CPU a busy wait; a GPU version waits on its stream.
    virtual void wait();
    // This rank's `in` into its place of `out`: slice `rank` of [world, *in], or with `columns`
    // its column block of [rows, world * cols].
    virtual void place(Tensor in, Tensor out, bool columns);

  private:
    int world_, rank_;
    double wait_us_;
    int64_t all_reduces_ = 0, gathers_ = 0;
};

}  // namespace myriad
