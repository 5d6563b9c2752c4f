// Test helpers that run a checkpoint through the engine and return every logit asked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/sequence_logits.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"

namespace myriad::testing {

struct LoadedModel {
    ModelConfig config;
    std::unique_ptr<Checkpoint> checkpoint;
    std::unique_ptr<WorkerGroup> workers;
};

// One thread per rank (one BLAS thread each). `dir` may also be a GGUF file.
// `expert_parallel`: whole routed experts per rank (--expert-parallel); `mtp`: its MTP layers too
// (--speculative mtp).
std::unique_ptr<LoadedModel> load_model(const std::string& dir, int tp, ModelOptions options = {},
                                        int64_t kv_blocks = 64,
                                        KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto,
                                        bool expert_parallel = false, bool mtp = false);

using myriad::single_sequence_step;

using myriad::sequence_logits;

// max over rows of (max |a - b| in the row / max |b| in the row).
double max_row_rel_diff(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab);

}  // namespace myriad::testing
