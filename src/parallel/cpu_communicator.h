// In-process communicator: ranks are threads of one process sharing memory. It makes tensor
// parallelism a CPU test: a sharding mistake fails `make test` instead of producing garbage.
#pragma once

#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/rank_barrier.h"

namespace myriad {

// State shared by the ranks of one group; create once, then one CpuCommunicator per rank.
class CpuCommGroup final : public CommGroup {
  public:
    explicit CpuCommGroup(int world);
    int world() const { return world_; }
    RankBarrier& barrier() override { return barrier_; }

  private:
    friend class CpuCommunicator;
    int world_;
    RankBarrier barrier_;
    std::vector<void*> slots_;  // each rank's posted buffer for the current collective
    std::vector<float> scratch_;
};

class CpuCommunicator final : public Communicator {
  public:
    CpuCommunicator(std::shared_ptr<CpuCommGroup> group, int rank);
    int rank() const override { return rank_; }
    int world() const override { return group_->world_; }
    void all_reduce_sum(Tensor t) override;
    void all_gather(Tensor in, Tensor out) override;
    void all_gather_columns(Tensor in, Tensor out) override;
    void broadcast(void* data, size_t bytes, int root) override;
    void barrier() override { wait("barrier"); }

  private:
    void wait(const char* op) { group_->barrier_.arrive_and_wait(rank_, op); }
    std::shared_ptr<CpuCommGroup> group_;
    int rank_;
};

}  // namespace myriad
