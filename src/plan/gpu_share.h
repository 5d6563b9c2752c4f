// Ranks that share a GPU (--devices 0,0,0,0) split its memory evenly: each may use
// `utilization` of the card divided by the number of ranks on it. Checked before any weight is
// read, with what one rank needs (its shard of the weights, its KV cache, its reserves), so that
// a layout that cannot fit stops with the numbers instead of failing an allocation while loading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace myriad::plan {

struct RankNeed {
    int64_t weights = 0;   // this rank's shard
    int64_t kv_cache = 0;  // its KV blocks
    int64_t reserve = 0;   // activations, workspace, CUDA graphs
    int64_t total() const { return weights + kv_cache + reserve; }
};

// Default share of a card's memory a run may take (vLLM's --gpu-memory-utilization default).
constexpr double kGpuMemoryUtilization = 0.90;

// The bytes one rank on `device` may use: utilization * memory / (ranks on that device).
int64_t rank_budget(const std::vector<int>& devices, int device, uint64_t memory,
                    double utilization = kGpuMemoryUtilization);

// Empty when every rank's need fits its share; otherwise one message naming the GPU, how many
// ranks share it, the share, the need (split into its parts) and what to change. `memory[d]`:
// the bytes of GPU d (0: unknown, not checked).
std::string shared_gpu_problem(const std::vector<int>& devices, const std::vector<uint64_t>& memory,
                               const RankNeed& need, double utilization = kGpuMemoryUtilization);

}  // namespace myriad::plan
