// The communicator of ranks that are threads of one process on GPUs, any number of them on one
// GPU (--devices 0,0,0,0): collectives through plain device buffers. Each rank waits for its own
// stream, posts its buffer, and copies every rank's buffer into its own device memory
// (cudaMemcpyPeerAsync: a device copy on one GPU, through the host between GPUs without peer
// access); the sums are taken there by one kernel in fixed rank order, so every rank gets
// bitwise the same result. Correct everywhere and slow: NCCL refuses two ranks on one GPU, and
// the fast collectives of several GPUs are a later part.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/rank_barrier.h"

namespace myriad::cuda {

// State shared by the ranks: the device of each, their posted buffers, the meeting point.
class DeviceCommGroup final : public CommGroup {
  public:
    explicit DeviceCommGroup(std::vector<int> devices);
    int world() const { return static_cast<int>(devices_.size()); }
    RankBarrier& barrier() override { return barrier_; }

  private:
    friend class DeviceCommunicator;
    std::vector<int> devices_;
    RankBarrier barrier_;
    std::vector<const void*> slots_;
};

class DeviceCommunicator final : public Communicator {
  public:
    // Rank `rank` of `group`, whose work runs on `stream` (of its device).
    DeviceCommunicator(std::shared_ptr<DeviceCommGroup> group, int rank, cudaStream_t stream);
    ~DeviceCommunicator() override;
    int rank() const override { return rank_; }
    int world() const override { return group_->world(); }
    void all_reduce_sum(Tensor t) override;
    void all_gather(Tensor in, Tensor out) override;
    void broadcast(void* data, size_t bytes, int root) override;
    void barrier() override { wait("barrier"); }

  private:
    void wait(const char* op) { group_->barrier_.arrive_and_wait(rank_, op); }
    void sync(const char* op);
    // A device buffer of at least `bytes` (regrown, contents dropped).
    void* ensure(void*& buf, size_t& size, size_t bytes, const char* what);

    std::shared_ptr<DeviceCommGroup> group_;
    int rank_, device_;
    cudaStream_t stream_;
    void* staging_ = nullptr;  // [world, piece] floats: every rank's piece of the input
    size_t staging_bytes_ = 0;
    void* result_ = nullptr;   // the sum, copied over the input once every rank has read it
    size_t result_bytes_ = 0;
};

// out[i] = in[0][i] + in[1][i] + ... + in[world-1][i], rows of `stride` floats, left to right.
void sum_ranks(const float* in, int world, int64_t n, int64_t stride, float* out,
               cudaStream_t stream);

}  // namespace myriad::cuda
