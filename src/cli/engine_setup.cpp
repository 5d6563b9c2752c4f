#include "cli/engine_setup.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "engine/device_choice.h"
#include "model/kv_cache.h"
#include "ops/backend.h"
#include "plan/gpu_share.h"
#include "plan/memory_plan.h"
#include "plan/weight_inventory.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

void add_engine_flags(CLI::App& app, EngineFlags& f) {
    app.add_option("--tp", f.tp, "tensor-parallel ranks (default 1)");
    app.add_flag("--expert-parallel", f.expert_parallel,
                 "whole routed experts per rank instead of every expert split over the ranks "
                 "(myriad plan says which fits)");
    app.add_option("--devices", f.devices,
                   "the GPU of each rank, e.g. 0,1,2,3 or 0,0,0,0 (ranks may share a GPU; "
                   "default: MYRIAD_CUDA_DEVICES, else GPUs 0 to tp-1)");
    app.add_option("--device", f.device,
                   "auto (default: cuda when a GPU is present, else cpu), cpu or cuda");
    app.add_option("--threads", f.threads, "CPU threads in all (default: all cores)");
    app.add_option("--kv-cache-dtype", f.kv_cache_dtype,
                   "latent cache storage: auto (the checkpoint's FP8 scheme, else exact F32 on the "
                   "CPU), bf16, fp8 (e4m3, per-layer k_scale from the checkpoint or 1.0), fp32");
    app.add_option("--max-num-seqs", f.max_num_seqs, "sequences running at once (default 64)");
    app.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                   "token budget of a step; prompts longer are prefilled in chunks (default 2048)");
    app.add_option("--naive-context-tokens", f.naive_context_tokens,
                   fmt::format("context tokens one prefill attention call gathers; longer contexts "
                               "go in pieces. Sizes a fixed workspace (4 bytes x this x (latent + "
                               "rope + heads x (nope + value)) per GPU; default {})",
                               kNaiveContextTokens));
    add_speculative_flags(app, f.speculative, f.num_speculative_tokens);
}

void add_speculative_flags(CLI::App& app, std::string& method, int64_t& num_tokens) {
    app.add_option("--speculative", method,
                   "speculative decoding: none (default) or ngram (drafts from the sequence's own "
                   "earlier tokens: prompt lookup); greedy output is unchanged token for token, "
                   "sampling's distribution too");
    app.add_option("--num-speculative-tokens", num_tokens,
                   "the longest draft a step verifies (default 3; it adapts to the acceptance)");
}

SpeculativeConfig speculative_config(const std::string& method, int64_t num_tokens) {
    SpeculativeConfig c;
    c.method = parse_speculative_method(method);
    if (num_tokens < 1 || num_tokens > 64)
        bad_input("--num-speculative-tokens {} must be in [1, 64]", num_tokens);
    c.num_speculative_tokens = num_tokens;
    return c;
}

void check_engine_flags(const EngineFlags& f) {
    resolve_device(f.device, f.tp, nullptr, f.devices);  // exits 2 naming the flag if it cannot
    parse_kv_cache_dtype(f.kv_cache_dtype, "--kv-cache-dtype");
    if (f.tp < 1) bad_input("--tp {} must be at least 1", f.tp);
    if (f.threads < 0) bad_input("--threads {} must be at least 0", f.threads);
    if (f.max_num_seqs < 1) bad_input("--max-num-seqs {} must be at least 1", f.max_num_seqs);
    if (f.max_num_batched_tokens < 1)
        bad_input("--max-num-batched-tokens {} must be at least 1", f.max_num_batched_tokens);
    if (f.naive_context_tokens < 1)
        bad_input("--naive-context-tokens {} must be at least 1", f.naive_context_tokens);
    speculative_config(f.speculative, f.num_speculative_tokens);
}

namespace {

// Ranks sharing a GPU split its memory: each rank's shard, KV cache and reserves must fit its
// share, checked before any weight is read.
void check_gpu_shares(const ModelConfig& config, const WorkerGroupOptions& wo,
                      const EngineFlags& f) {
    std::vector<uint64_t> memory;
    for (int d : wo.devices) {
        if (static_cast<size_t>(d) >= memory.size()) memory.resize(static_cast<size_t>(d) + 1, 0);
        GpuInfo info;
        if (cuda_device_info(d, &info)) memory[static_cast<size_t>(d)] = info.memory;
    }
    const int ep = wo.expert_parallel ? wo.tp : 1;
    plan::PlanOptions po;
    po.max_batched_tokens = f.max_num_batched_tokens;
    po.max_num_seqs = f.max_num_seqs;
    po.naive_context_tokens = f.naive_context_tokens;
    plan::RankNeed need;
    need.weights =
        plan::weight_bytes_per_gpu(plan::weights_from_config(config), config, wo.tp, ep).total();
    const DType kv = wo.kv_cache_dtype == KvCacheDtype::Fp8    ? DType::F8_E4M3
                     : wo.kv_cache_dtype == KvCacheDtype::Fp32 ? DType::F32
                                                               : DType::BF16;
    need.kv_cache = wo.kv_blocks * wo.kv_block_size * plan::kv_bytes_per_token(config, kv);
    need.reserve =
        plan::activation_bytes(config, po, wo.tp, ep) + po.workspace_bytes + po.cuda_graph_bytes;
    if (const std::string why = plan::shared_gpu_problem(wo.devices, memory, need); !why.empty())
        bad_input("--tp {} on --devices {}: {}", wo.tp,
                  fmt::format("{}", fmt::join(wo.devices, ",")), why);
}

}  // namespace

LoadedEngine load_engine(const std::string& dir, const EngineFlags& f, const EngineSizing& s,
                         const std::function<void(const std::string&)>& phase) {
    check_engine_flags(f);
    auto tell = [&](const std::string& what) {
        if (phase) phase(what);
    };
    LoadedEngine m;
    m.dir = dir;
    m.config = load_model_config(dir);
    m.defaults = load_model_defaults(dir, m.config);
    tell("loading weights");
    m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.tp = f.tp;
    wo.expert_parallel = f.expert_parallel;
    wo.threads = f.threads;
    std::string device_note;
    wo.device = choose_device(f.device, f.tp, m.config, *m.checkpoint, &device_note, f.devices);
    if (!device_note.empty()) log::info("{}", device_note);
    if (wo.device == Device::Cuda) wo.devices = parse_devices(f.devices, f.tp);
    wo.kv_cache_dtype = parse_kv_cache_dtype(f.kv_cache_dtype, "--kv-cache-dtype");
    wo.model.naive_context_tokens = f.naive_context_tokens;
    const int64_t context = s.max_model_len > 0 ? s.max_model_len : s.seq_tokens;
    wo.kv_blocks = s.kv_blocks > 0
                       ? s.kv_blocks
                       : std::max(context, f.max_num_seqs * s.seq_tokens) / wo.kv_block_size + 1;
    if (wo.device == Device::Cuda) check_gpu_shares(m.config, wo, f);
    m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = f.max_num_batched_tokens;
    ec.scheduler.max_num_seqs = f.max_num_seqs;
    ec.max_model_len = s.max_model_len;
    ec.eos_ids = m.defaults.eos_ids;
    ec.defaults = m.defaults.sampling;
    ec.check_invariants = s.check_invariants;
    ec.speculative = speculative_config(f.speculative, f.num_speculative_tokens);
    m.engine = std::make_unique<Engine>(*m.workers, ec);
    return m;
}

void add_sampling_flags(CLI::App& app, SamplingFlags& f, double fallback_temperature,
                        const char* seed_help) {
    f.temperature = fallback_temperature;
    f.temperature_opt = app.add_option(
        "--temperature", f.temperature,
        fmt::format("0 = greedy (default: generation_config.json, else {})", fallback_temperature));
    f.top_p_opt = app.add_option("--top-p", f.top_p, "nucleus sampling mass (default 1)");
    f.top_k_opt = app.add_option("--top-k", f.top_k, "sample among the k best (0 = off)");
    f.min_p_opt = app.add_option("--min-p", f.min_p, "drop tokens below min_p * best");
    app.add_option("--seed", f.seed, seed_help);
}

SamplingParams SamplingFlags::resolve(const Engine& engine) const {
    SamplingParams p;
    p.temperature = temperature;
    p.top_p = top_p;
    p.top_k = top_k;
    p.min_p = min_p;
    p = engine.with_defaults(p, temperature_opt->count() > 0, top_p_opt->count() > 0,
                             top_k_opt->count() > 0, min_p_opt->count() > 0, false);
    if (seed >= 0) p.seed = static_cast<uint64_t>(seed);
    return p;
}

}  // namespace myriad::cli
