#include "plan/gpu_share.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/memory_plan.h"

namespace myriad::plan {

int64_t rank_budget(const std::vector<int>& devices, int device, uint64_t memory,
                    double utilization) {
    const auto ranks = std::count(devices.begin(), devices.end(), device);
    if (ranks == 0) return 0;
    return static_cast<int64_t>(utilization * static_cast<double>(memory) /
                                static_cast<double>(ranks));
}

std::string shared_gpu_problem(const std::vector<int>& devices, const std::vector<uint64_t>& memory,
                               const RankNeed& need, double utilization) {
    std::vector<int> seen;
    for (int d : devices) {
        if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
        seen.push_back(d);
        if (d < 0 || static_cast<size_t>(d) >= memory.size() || memory[d] == 0) continue;
        const int64_t budget = rank_budget(devices, d, memory[d], utilization);
        if (need.total() <= budget) continue;
        const auto ranks = std::count(devices.begin(), devices.end(), d);
        const std::string split =
            ranks > 1
                ? fmt::format("{} ranks share GPU {}: each may use {:.0f}% of its {} / {} = {}",
                              ranks, d, 100 * utilization, gb(static_cast<int64_t>(memory[d])),
                              ranks, gb(budget))
                : fmt::format("GPU {} may give {:.0f}% of its {} = {}", d, 100 * utilization,
                              gb(static_cast<int64_t>(memory[d])), gb(budget));
        return fmt::format(
            "{}, but a rank needs {} (weights {}, KV cache {}, activations and reserves {}); "
            "place fewer ranks on that GPU (--devices), lower --kv-blocks, or use more GPUs",
            split, gb(need.total()), gb(need.weights), gb(need.kv_cache), gb(need.reserve));
    }
    return "";
}

}  // namespace myriad::plan
