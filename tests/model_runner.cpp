#include "model_runner.h"

#include <algorithm>
#include <cmath>

namespace myriad::testing {

std::unique_ptr<LoadedModel> load_model(const std::string& dir, int tp, ModelOptions options,
                                        int64_t kv_blocks, KvCacheDtype kv_cache_dtype,
                                        bool expert_parallel, bool mtp) {
    auto m = std::make_unique<LoadedModel>();
    m->config = load_model_config(dir);
    m->checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.tp = tp;
    wo.expert_parallel = expert_parallel;
    wo.threads = tp;  // one thread per rank, one BLAS thread each
    wo.kv_blocks = kv_blocks;
    wo.kv_cache_dtype = kv_cache_dtype;
    wo.model = options;
    wo.mtp = mtp;
    m->workers = std::make_unique<WorkerGroup>(m->config, *m->checkpoint, wo);
    return m;
}

double max_row_rel_diff(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
    double worst = 0.0;
    const size_t rows = b.size() / static_cast<size_t>(vocab);
    for (size_t r = 0; r < rows; ++r) {
        double diff = 0.0, ref = 0.0;
        for (int64_t i = 0; i < vocab; ++i) {
            diff = std::max(diff, double(std::fabs(a[r * vocab + i] - b[r * vocab + i])));
            ref = std::max(ref, double(std::fabs(b[r * vocab + i])));
        }
        if (std::isnan(diff)) return INFINITY;
        worst = std::max(worst, diff / std::max(ref, 1e-30));
    }
    return worst;
}

}  // namespace myriad::testing
