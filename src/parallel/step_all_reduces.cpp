#include "parallel/step_all_reduces.h"

namespace myriad {

StepAllReduces step_all_reduces(const CommGroup& group, const std::map<size_t, int64_t>& before) {
    StepAllReduces out;
    double us = 0;
    bool measured = true;
    for (const auto& [bytes, total] : group.all_reduce_counts()) {
        const auto it = before.find(bytes);
        const int64_t n = total - (it == before.end() ? 0 : it->second);
        if (n <= 0) continue;
        const CommGroup::AllReduceEstimate e = group.all_reduce_estimate(bytes);
        out.sizes.push_back({bytes, n, e.algorithm, e.us});
        if (e.us < 0)
            measured = false;
        else
            us += e.us * static_cast<double>(n);
    }
    if (measured && !out.sizes.empty()) out.ms = us * 1e-3;
    return out;
}

}  // namespace myriad
