// The communicator of one rank on one GPU: reductions are the identity, gathers a device copy.
// NCCL tensor parallelism replaces it for several GPUs (the Communicator interface stays).
#pragma once

#include "parallel/communicator.h"

namespace myriad::cuda {

class SingleGpuCommunicator final : public Communicator {
  public:
    int rank() const override { return 0; }
    int world() const override { return 1; }
    void all_reduce_sum(Tensor) override {}
    // Orders with the backend's (blocking) stream through the legacy default stream.
    void all_gather(Tensor in, Tensor out) override;
    void all_gather_columns(Tensor in, Tensor out) override { all_gather(in, out); }
    void broadcast(void*, size_t, int) override {}
    void barrier() override {}
    bool graph_safe() const override { return true; }
};

}  // namespace myriad::cuda
