// NCCL communicators for ranks that are threads of one process, each on its own GPU: one
// ncclCommInitAll for the group, one NCCL communicator per rank. Every collective is enqueued on
// the rank's stream and returns at once (no host synchronisation), so a CUDA graph can record it;
// its result is in place in stream order. Capture with cudaStreamCaptureModeThreadLocal and
// replay each GPU's graph from its own thread (NCCL's multi-GPU-per-process graph rules,
// multigpu.md §2).
//
// Shutdown order: destroy every CUDA graph that recorded a collective BEFORE the group (since
// NCCL 2.26 ncclCommDestroy waits for the graphs that reference the communicator: a graph that
// outlives it hangs teardown). The group is held by its communicators and its owner; when the
// last holder lets go it synchronises each GPU and then destroys the NCCL communicators.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/nccl_library.h"
#include "parallel/rank_barrier.h"

namespace myriad::cuda {

class NcclCommGroup final : public CommGroup {
  public:
    // Made by make_nccl_comm_group: `comms[r]` is rank r's communicator, on GPU `devices[r]`.
    NcclCommGroup(const nccl::Library& nccl, std::vector<int> devices,
                  std::vector<nccl::Comm> comms);
    ~NcclCommGroup() override;
    NcclCommGroup(const NcclCommGroup&) = delete;
    NcclCommGroup& operator=(const NcclCommGroup&) = delete;

    RankBarrier& barrier() override { return barrier_; }
    int world() const { return static_cast<int>(devices_.size()); }
    int device(int rank) const { return devices_[static_cast<size_t>(rank)]; }
    nccl::Comm comm(int rank) const { return comms_[static_cast<size_t>(rank)]; }
    const nccl::Library& library() const { return nccl_; }

    // A rank failed inside a step: aborts every NCCL communicator (kernels waiting for that rank
    // return; NCCL cannot be used by this group afterwards) and the meeting point. Teardown then
    // frees what is left without waiting for the GPUs.
    void abort(const std::string& why) override;

  private:
    const nccl::Library& nccl_;
    std::vector<int> devices_;
    std::vector<nccl::Comm> comms_;
    RankBarrier barrier_;
    bool aborted_ = false;
};

class NcclCommunicator final : public Communicator {
  public:
    // Rank `rank` of `group`, whose work runs on `stream` (of the rank's GPU).
    NcclCommunicator(std::shared_ptr<NcclCommGroup> group, int rank, cudaStream_t stream);
    int rank() const override { return rank_; }
    int world() const override { return group_->world(); }
    // F32 sum, in place.
    void all_reduce_sum(Tensor t) override;
    void all_gather(Tensor in, Tensor out) override;
    // all_gather into a buffer of this rank's, then each rank's slice into its columns.
    void all_gather_columns(Tensor in, Tensor out) override;
    void broadcast(void* data, size_t bytes, int root) override;
    bool graph_safe() const override { return true; }
    // The ranks' host threads meet (no stream work).
    void barrier() override { group_->barrier().arrive_and_wait(rank_, "barrier"); }

  private:
    void check(nccl::Result r, const char* op) const;

    std::shared_ptr<NcclCommGroup> group_;
    int rank_, device_;
    cudaStream_t stream_;
    void* gather_ =
        nullptr;  // all_gather_columns' [world, rows, cols] (grown, never inside a graph
    size_t gather_bytes_ = 0;  // of a larger size than the uncaptured step before it)
  public:
    ~NcclCommunicator() override;
};

// The NCCL group of ranks on GPUs `devices` (devices[r] is rank r's; they must be distinct: NCCL
// refuses two ranks on one GPU). Before NCCL initialises it sets the NCCL variables chosen from
// the GPUs' topology (parallel/nccl_env.h) and prints them in one line. Null with `why` set when
// NCCL cannot be loaded, a GPU repeats or is missing, or NCCL fails to set up.
std::shared_ptr<NcclCommGroup> make_nccl_comm_group(const std::vector<int>& devices,
                                                    std::string* why);

}  // namespace myriad::cuda
