// The RunPlan: everything a run will be, decided once, before any weight is read, from the flags,
// the model's headers (config.json, quantisation config, safetensors or GGUF headers) and the
// machine's GPUs (or the CPU). serve, generate, chat and bench-model run what it says; `myriad
// plan MODEL [the same flags]` prints the same object. A combination that cannot run stops here
// (bad input, exit 2) with the reason and the nearest configuration that works.
//
// Memory, per rank:
//   GPU: budget = --gpu-memory-utilization * the smallest card's memory / ranks on that card
//        (plan/gpu_share.h); KV cache = budget - weights - activations - workspace - CUDA graphs,
//        in whole blocks.
//   CPU: the KV cache takes --kv-cache-memory (vLLM's CPU backend: 4 GiB), split evenly over the
//        ranks (each holds the whole latent cache, as on GPUs); weights are mapped from the files.
// max_model_len: the model's max_position_embeddings unless --max-model-len lowers it; it must
// fit the cache (one sequence of max_model_len tokens in one rank's blocks).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/naive_context.h"
#include "ops/kernel_plan.h"
#include "ops/weight.h"
#include "parallel/layout.h"
#include "plan/weight_inventory.h"

namespace myriad {
class Checkpoint;
}

namespace myriad::plan {

// vLLM's defaults where the concept is the same.
constexpr double kDefaultGpuMemoryUtilization = 0.90;
constexpr int64_t kDefaultKvCacheMemory = int64_t{4} << 30;  // the CPU's KV cache
constexpr int64_t kDefaultMaxNumSeqs = 64;
constexpr int64_t kDefaultMaxNumBatchedTokens = 2048;
constexpr int64_t kPlanBlockSize = 16;                    // tokens per KV block
constexpr int64_t kGpuWorkspaceBytes = int64_t{1} << 30;  // CUDA context, cuBLASLt, buffers
constexpr int64_t kCudaGraphBytes = int64_t{1} << 30;     // decode graphs up to max_num_seqs
// All-reduce messages from this size take two-shot (reduce-scatter + all-gather) instead of
// one-shot, until serve measures the crossover on the ranks' GPUs.
constexpr int64_t kDefaultTwoShotFrom = int64_t{256} << 10;

// What the user asked (the engine flags); 0 or empty: the default.
struct RunFlags {
    std::string device = "auto";  // --device auto, cpu, cuda
    int tp = 1;
    bool expert_parallel = false;
    std::string devices;  // --devices 0,0,1,1 (empty: MYRIAD_CUDA_DEVICES, else 0..tp-1)
    int threads = 0;
    std::string kv_cache_dtype = "auto";
    int64_t max_model_len = 0;  // 0: max_position_embeddings
    int64_t max_num_seqs = kDefaultMaxNumSeqs;
    int64_t max_num_batched_tokens = kDefaultMaxNumBatchedTokens;
    int64_t naive_context_tokens = kNaiveContextTokens;
    double gpu_memory_utilization = kDefaultGpuMemoryUtilization;
    int64_t kv_cache_memory = kDefaultKvCacheMemory;
    int64_t kv_blocks = 0;  // --kv-blocks: exactly this many blocks per rank (0: from the budget)
};

// The GPUs a plan may use: this machine's (probe_machine) or named ones (`myriad plan --gpus`,
// cc 0: the card's kernels are not checked).
struct MachineGpus {
    std::vector<GpuInfo> gpus;
    std::string why_none;                  // when empty: why (no driver, no backend)
    std::vector<std::string> built_archs;  // this binary's CUDA architectures
    std::string source = "CUDA";           // "CUDA" or "--gpus 8xH200"
};

// CUDA's devices of this process (none without the backend, the driver or a GPU).
MachineGpus probe_machine();

// What the model's files say, without reading a weight.
struct ModelHeaders {
    std::string path;  // the folder or .gguf file
    const ModelConfig* config = nullptr;
    const Checkpoint* checkpoint = nullptr;  // for validation and the linear formats
    const WeightInventory* weights = nullptr;
};

struct AllReducePlan {
    std::string algorithm;       // "none (one rank)", "CPU threads", "GPU kernels", ...
    int64_t two_shot_from = -1;  // the default crossover in bytes (-1: not applicable)
    // What serve measured at start (-1 / empty until then; never in `myriad plan`).
    int64_t measured_two_shot_from = -1;
    std::string measured;
};

struct RunPlan {
    std::string model;
    Device device = Device::Cpu;
    std::string device_reason;
    std::vector<int> devices;  // each rank's GPU (CUDA)
    std::vector<std::string> gpu_names;
    int tp = 1;
    bool expert_parallel = false;
    myriad::Layout layout;
    int threads = 0;

    DType kv_dtype = DType::F32;
    std::string kv_reason;
    std::vector<std::string> kernels;  // the GPU kernel plan, one choice per line

    int64_t max_model_len = 0;
    std::string max_model_len_reason;
    int64_t max_num_seqs = 0, max_num_batched_tokens = 0, naive_context_tokens = 0;

    // Per rank.
    int64_t weight_bytes = 0;
    int64_t activation_bytes = 0, workspace_bytes = 0, cuda_graph_bytes = 0;
    double gpu_memory_utilization = 0;  // GPU runs
    int64_t kv_cache_memory = 0;        // CPU runs
    int64_t gpu_bytes = 0;              // the smallest card's memory (GPU)
    int ranks_per_gpu = 1;              // the most ranks on one card
    int64_t budget_bytes = 0;           // what a rank may use
    int64_t kv_bytes_per_token = 0;
    int64_t kv_block_size = kPlanBlockSize;
    int64_t kv_blocks = 0;
    std::string kv_blocks_reason;

    AllReducePlan all_reduce;

    int64_t reserve_bytes() const { return activation_bytes + workspace_bytes + cuda_graph_bytes; }
    int64_t kv_cache_bytes() const { return kv_blocks * kv_block_size * kv_bytes_per_token; }
    int64_t kv_tokens() const { return kv_blocks * kv_block_size; }
    // The bytes one rank should hold on its GPU after loading and warm-up.
    int64_t planned_rank_bytes() const { return weight_bytes + reserve_bytes() + kv_cache_bytes(); }
};

// The plan for `flags` on `model` and `machine`; bad input (exit 2) with the reason and the
// nearest configuration that works when the combination cannot run.
RunPlan make_run_plan(const RunFlags& flags, const ModelHeaders& model, const MachineGpus& machine);

// Exits 2 naming the flag when a value of `flags` is out of its range (make_run_plan calls it;
// commands call it before they open the model).
void check_run_flags(const RunFlags& flags);

nlohmann::ordered_json run_plan_json(const RunPlan& plan);
// A crossover: "256 KiB"; -1: "never (one-shot at every size)".
std::string size_label(int64_t bytes);
std::string run_plan_text(const RunPlan& plan);

// After loading and warm-up: empty when `used` (bytes in use on the run's GPUs, summed) is
// within a few percent of the plan, else the warning naming the difference.
std::string memory_check(const RunPlan& plan, int64_t used);

}  // namespace myriad::plan
