// In-process communicator: ranks are threads of one process sharing memory. It makes tensor
// parallelism a CPU test: a sharding mistake fails `make test` instead of producing garbage.
#pragma once

#include <barrier>
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace myriad {

// State shared by the ranks of one group; create once, then one CpuCommunicator per rank.
class CpuCommGroup {
public:
    explicit CpuCommGroup(int world);
    int world() const { return world_; }

private:
    friend class CpuCommunicator;
    int world_;
    std::barrier<> barrier_;
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
    void broadcast(void* data, size_t bytes, int root) override;
    void barrier() override;

private:
    std::shared_ptr<CpuCommGroup> group_;
    int rank_;
};

}  // namespace myriad
