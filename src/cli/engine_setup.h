// What generate, serve, chat and bench-model share: the engine flags, and loading a model folder
// into workers and an engine with them. One place decides the device, the KV cache dtype and the
// cache size, so the commands cannot drift apart.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/model_defaults.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "model/naive_context.h"

namespace myriad::cli {

struct EngineFlags {
    int tp = 1;
    bool expert_parallel = false;
    std::string devices;  // --devices 0,0,1,1: each rank's GPU (empty: MYRIAD_CUDA_DEVICES, 0..)
    int threads = 0;      // CPU threads in all; 0 = the machine's
    std::string device = "auto";
    std::string kv_cache_dtype = "auto";
    int64_t max_num_seqs = 64;
    int64_t max_num_batched_tokens = 2048;
    int64_t naive_context_tokens = kNaiveContextTokens;
    std::string speculative = "none";    // --speculative: none or ngram
    int64_t num_speculative_tokens = 3;  // --num-speculative-tokens
};

// Registers --tp, --expert-parallel, --devices, --device, --threads, --kv-cache-dtype,
// --max-num-seqs, --max-num-batched-tokens, --naive-context-tokens, --speculative,
// --num-speculative-tokens.
void add_engine_flags(CLI::App& app, EngineFlags& flags);

// --speculative METHOD and --num-speculative-tokens K (bench-model has them without the rest).
void add_speculative_flags(CLI::App& app, std::string& method, int64_t& num_tokens);

// Exits 2 naming the flag when --device or --kv-cache-dtype asks for what this build cannot do.
void check_engine_flags(const EngineFlags& flags);

// --speculative and --num-speculative-tokens as the engine takes them (bad input names the flag).
SpeculativeConfig speculative_config(const std::string& method, int64_t num_speculative_tokens);

// --temperature, --top-p, --top-k, --min-p, --seed; what is not given comes from the model's
// generation_config.json, else `fallback_temperature` (and no truncation).
struct SamplingFlags {
    double temperature = 1, top_p = 1, min_p = 0;
    int64_t top_k = 0;
    int64_t seed = -1;
    CLI::Option *temperature_opt = nullptr, *top_p_opt = nullptr, *top_k_opt = nullptr,
                *min_p_opt = nullptr;
    SamplingParams resolve(const Engine& engine) const;
};

void add_sampling_flags(CLI::App& app, SamplingFlags& flags, double fallback_temperature,
                        const char* seed_help = "random seed");

struct LoadedEngine {
    std::string dir;
    ModelConfig config;
    ModelDefaults defaults;
    std::unique_ptr<Checkpoint> checkpoint;
    std::unique_ptr<WorkerGroup> workers;
    std::unique_ptr<Engine> engine;
};

struct EngineSizing {
    int64_t kv_blocks = 0;      // blocks per rank; 0 = enough for max_num_seqs * seq_tokens
    int64_t seq_tokens = 1024;  // tokens each running sequence is given room for
    int64_t max_model_len = 0;  // 0: max_position_embeddings capped by the cache
    bool check_invariants = false;
};

// Loads `dir` (config, generation defaults, weights) and builds the engine (not started).
// `phase` (optional) is told what is loading, for /health and sd_notify.
LoadedEngine load_engine(const std::string& dir, const EngineFlags& flags,
                         const EngineSizing& sizing,
                         const std::function<void(const std::string&)>& phase = {});

}  // namespace myriad::cli
