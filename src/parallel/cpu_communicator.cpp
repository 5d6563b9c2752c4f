#include "parallel/cpu_communicator.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace myriad {

CpuCommGroup::CpuCommGroup(int world)
    : world_(world),
      barrier_(world, collective_timeout()),
      slots_(static_cast<size_t>(world), nullptr) {}

CpuCommunicator::CpuCommunicator(std::shared_ptr<CpuCommGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
    MYRIAD_CHECK(rank >= 0 && rank < group_->world_, "rank {} outside world {}", rank,
                 group_->world_);
}

void CpuCommunicator::all_reduce_sum(Tensor t) {
    MYRIAD_CHECK(t.dtype == DType::F32, "all_reduce_sum supports F32, got {}", dtype_name(t.dtype));
    const int world = group_->world_;
    if (world == 1) return;
    const size_t n = static_cast<size_t>(t.numel());
    auto& g = *group_;
    g.slots_[rank_] = t.data;
    if (rank_ == 0 && g.scratch_.size() < n) g.scratch_.resize(n);
    wait("all_reduce_sum");
    // Each rank reduces one slice, always in rank order, so every rank sees identical sums.
    size_t begin = n * rank_ / world, end = n * (rank_ + 1) / world;
    float* scratch = g.scratch_.data();
    for (size_t i = begin; i < end; ++i) {
        float s = 0.0f;
        for (int r = 0; r < world; ++r) s += static_cast<const float*>(g.slots_[r])[i];
        scratch[i] = s;
    }
    wait("all_reduce_sum");
    std::memcpy(t.data, scratch, n * sizeof(float));
    wait("all_reduce_sum");  // the scratch and slots are reused by the next collective
}

void CpuCommunicator::all_gather(Tensor in, Tensor out) {
    count_gathered(out);
    const int world = group_->world_;
    const size_t bytes = in.nbytes();
    MYRIAD_CHECK(out.nbytes() == bytes * world, "all_gather: output holds {} bytes, need {}",
                 out.nbytes(), bytes * world);
    auto& g = *group_;
    g.slots_[rank_] = in.data;
    wait("all_gather");
    for (int r = 0; r < world; ++r)
        std::memcpy(static_cast<uint8_t*>(out.data) + bytes * r, g.slots_[r], bytes);
    wait("all_gather");
}

void CpuCommunicator::all_gather_columns(Tensor in, Tensor out) {
    count_gathered(out);
    const int world = group_->world_;
    const int64_t rows = in.dim(0), cols = in.numel() / std::max<int64_t>(rows, 1);
    MYRIAD_CHECK(
        in.dtype == DType::F32 && out.dtype == DType::F32 && out.numel() == in.numel() * world,
        "all_gather_columns: [{}, {}] F32 from each of {} ranks into {} elements", rows, cols,
        world, out.numel());
    auto& g = *group_;
    g.slots_[rank_] = in.data;
    wait("all_gather_columns");
    auto* o = static_cast<float*>(out.data);
    for (int r = 0; r < world; ++r) {
        const auto* src = static_cast<const float*>(g.slots_[r]);
        for (int64_t i = 0; i < rows; ++i)
            std::memcpy(o + (i * world + r) * cols, src + i * cols, cols * sizeof(float));
    }
    wait("all_gather_columns");
}

void CpuCommunicator::broadcast(void* data, size_t bytes, int root) {
    auto& g = *group_;
    if (rank_ == root) g.slots_[root] = data;
    wait("broadcast");
    if (rank_ != root) std::memcpy(data, g.slots_[root], bytes);
    wait("broadcast");
}

}  // namespace myriad
