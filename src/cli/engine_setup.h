// What generate, serve, chat and bench-model share: the engine flags, the run plan they make
// (plan/run_plan.h: device, layout, KV cache dtype and size, max_model_len, all decided there)
// and loading a model source into workers and an engine that run exactly that plan.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "cli/model_source.h"
#include "engine/engine.h"
#include "engine/model_defaults.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "model/naive_context.h"
#include "plan/run_plan.h"

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
    std::string speculative = "none";    // --speculative: none, ngram, mtp or eagle3
    int64_t num_speculative_tokens = 3;  // --num-speculative-tokens
    std::string draft_model;             // --draft-model DIR (eagle3)
    // The run plan's memory and context flags (vLLM's names).
    int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
    double gpu_memory_utilization = plan::kDefaultGpuMemoryUtilization;
    std::string kv_cache_memory = "4GiB";  // the CPU's KV cache
    int64_t kv_blocks = 0;                 // serve --kv-blocks: exactly this many (0: the budget)
};

// Registers --tp, --expert-parallel, --devices, --device, --threads, --kv-cache-dtype,
// --max-num-seqs, --max-num-batched-tokens, --naive-context-tokens, --max-model-len,
// --gpu-memory-utilization, --kv-cache-memory, --speculative, --num-speculative-tokens,
// --draft-model.
void add_engine_flags(CLI::App& app, EngineFlags& flags);

// --speculative METHOD, --num-speculative-tokens K and --draft-model DIR.
void add_speculative_flags(CLI::App& app, std::string& method, int64_t& num_tokens,
                           std::string& draft_model);

// The storage of run_headers' adjusted config and weights.
struct RunHeaders {
    ModelConfig config;
    plan::WeightInventory weights;
};

// The model's headers as `flags` will run it: with --speculative mtp its MTP layers counted
// (config and inventory kept in `keep`); bad input when it has none.
plan::ModelHeaders run_headers(const ModelSource& source, const EngineFlags& flags,
                               RunHeaders& keep);

// The flags as the run plan takes them (--kv-cache-memory parsed: bad input naming it).
plan::RunFlags run_flags(const EngineFlags& flags);
// The run plan of `source` with `flags` on this machine: bad input (exit 2) with the reason and
// the nearest configuration that works, before any weight is read.
plan::RunPlan plan_run(const ModelSource& source, const EngineFlags& flags);

// Exits 2 naming the flag when --device or --kv-cache-dtype asks for what this build cannot do.
void check_engine_flags(const EngineFlags& flags);

// --speculative, --num-speculative-tokens and --draft-model as the engine takes them (bad input
// names the flag; eagle3's draft config.json is read here, before the target loads, and its
// errors name the file and field).
SpeculativeConfig speculative_config(const std::string& method, int64_t num_speculative_tokens,
                                     const std::string& draft_model = "");

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

// Where start-up went, serve's start to READY (printed at READY; --json carries it too). The
// load is reading (the shard reader, first read to last) and copying (what the load took beyond
// the reading it overlapped: conversion, uploads, the KV cache).
struct StartupTimes {
    double planning = 0;     // flags, headers and GPUs to the run plan
    double disk_sample = 0;  // measuring the disk's read rate (a short cold read)
    double reading = 0;
    double copying = 0;
    double warm_up = 0;        // the warm-up step (GPUs)
    double graph_capture = 0;  // CUDA graphs captured by READY (later sizes: at their 2nd step)
    double total = 0;          // serve's start to READY
    uint64_t bytes_read = 0;   // of the checkpoint's files, by the shard reader
};

struct LoadedEngine {
    ModelSource source;
    plan::RunPlan plan;
    std::unique_ptr<WorkerGroup> workers;
    std::unique_ptr<Engine> engine;
    StartupTimes times;  // reading, copying, warm-up (the caller adds the rest)
    const ModelDefaults& defaults() const { return source.defaults; }
};

struct LoadOptions {
    bool check_invariants = false;
    SpeculativeConfig speculative;  // --speculative (speculative_config of the engine flags)
    // Told what is loading, for /health and sd_notify (optional).
    std::function<void(const std::string&)> phase;
    // A progress bar (a terminal) or lines (not one) on stderr while the weights are read, each
    // line also told to `phase`.
    bool progress = false;
};

// Loads the weights of `source` as `plan` says and builds the engine (not started). On GPUs the
// all-reduce crossovers measured at start replace the plan's defaults (model.plan).
LoadedEngine load_engine(ModelSource source, const plan::RunPlan& plan,
                         const LoadOptions& options = {});

// The bytes in use on the plan's GPUs (summed over the distinct ones); -1 on the CPU or when
// unknown.
int64_t gpu_memory_in_use(const plan::RunPlan& plan);

}  // namespace myriad::cli
