// The GPU form of ModelledCommunicator (parallel/modelled_communicator.h): each collective is a
// one-thread kernel that spins on the GPU's clock for the modelled latency, and a gather an async
// copy of this rank's part, both on the rank's stream, so CUDA graphs record them as they would
// record the real collectives.
#pragma once

#include <cuda_runtime_api.h>

#include "parallel/modelled_communicator.h"

namespace myriad::cuda {

class ModelledGpuCommunicator final : public ModelledCommunicator {
  public:
    ModelledGpuCommunicator(int world, int rank, double wait_us, cudaStream_t stream);
    bool graph_safe() const override { return true; }

  protected:
    void wait() override;
    void place(Tensor in, Tensor out, bool columns) override;

  private:
    cudaStream_t stream_;
};

}  // namespace myriad::cuda
