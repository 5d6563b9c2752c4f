#include "cli/engine_setup.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "model/eagle3_config.h"
#include "model/kv_cache.h"
#include "ops/backend.h"
#include "plan/gpu_spec.h"
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
    // The run plan's memory and context (vLLM's flag names).
    app.add_option("--max-model-len", f.max_model_len,
                   "context length: prompt + output tokens (default: the model's "
                   "max_position_embeddings; it must fit the KV cache)");
    app.add_option("--gpu-memory-utilization", f.gpu_memory_utilization,
                   "share of each GPU's memory the run may take: weights, reserves and the KV "
                   "cache, which gets what is left (default 0.90; ranks sharing a GPU split it)");
    app.add_option("--kv-cache-memory", f.kv_cache_memory,
                   "on the CPU: the KV cache's size, split over the ranks, e.g. 4GiB, 512MiB "
                   "(default 4GiB)");
    add_speculative_flags(app, f.speculative, f.num_speculative_tokens, f.draft_model);
}

void add_speculative_flags(CLI::App& app, std::string& method, int64_t& num_tokens,
                           std::string& draft_model) {
    app.add_option("--speculative", method,
                   "speculative decoding: none (default), ngram (drafts from the sequence's own "
                   "earlier tokens: prompt lookup), mtp (the checkpoint's MTP layers, "
                   "num_nextn_predict_layers: DeepSeek-V3/R1) or eagle3 (an EAGLE3 draft "
                   "checkpoint, --draft-model); greedy output is unchanged token for token, "
                   "sampling's distribution too");
    app.add_option("--num-speculative-tokens", num_tokens,
                   "the longest draft a step verifies (default 3; it adapts to the acceptance)");
    app.add_option("--draft-model", draft_model,
                   "--speculative eagle3: the EAGLE3 draft checkpoint folder made for this model "
                   "(config.json of LlamaForCausalLMEagle3 and its safetensors)");
}

SpeculativeConfig speculative_config(const std::string& method, int64_t num_tokens,
                                     const std::string& draft_model) {
    SpeculativeConfig c;
    c.method = parse_speculative_method(method);
    if (num_tokens < 1 || num_tokens > 64)
        bad_input("--num-speculative-tokens {} must be in [1, 64]", num_tokens);
    c.num_speculative_tokens = num_tokens;
    if (c.method == SpeculativeMethod::Eagle3) {
        if (draft_model.empty())
            bad_input(
                "--speculative eagle3 needs --draft-model DIR (an EAGLE3 draft checkpoint "
                "folder made for this model)");
        read_eagle3_config(draft_model);  // its mistakes before the target loads
    } else if (!draft_model.empty()) {
        bad_input("--draft-model {} is for --speculative eagle3 (--speculative is {})", draft_model,
                  method);
    }
    c.draft_model = draft_model;
    return c;
}

void check_engine_flags(const EngineFlags& f) {
    resolve_device(f.device, f.tp, nullptr, f.devices);  // exits 2 naming the flag if it cannot
    parse_kv_cache_dtype(f.kv_cache_dtype, "--kv-cache-dtype");
    plan::check_run_flags(run_flags(f));
    speculative_config(f.speculative, f.num_speculative_tokens, f.draft_model);
}

plan::RunFlags run_flags(const EngineFlags& f) {
    plan::RunFlags r;
    r.device = f.device;
    r.tp = f.tp;
    r.expert_parallel = f.expert_parallel;
    r.devices = f.devices;
    r.threads = f.threads;
    r.kv_cache_dtype = f.kv_cache_dtype;
    r.max_model_len = f.max_model_len;
    r.max_num_seqs = f.max_num_seqs;
    r.max_num_batched_tokens = f.max_num_batched_tokens;
    r.naive_context_tokens = f.naive_context_tokens;
    r.gpu_memory_utilization = f.gpu_memory_utilization;
    r.kv_cache_memory =
        static_cast<int64_t>(plan::parse_size(f.kv_cache_memory, "--kv-cache-memory"));
    r.kv_blocks = f.kv_blocks;
    return r;
}

plan::ModelHeaders run_headers(const ModelSource& source, const EngineFlags& f, RunHeaders& keep) {
    plan::ModelHeaders headers = source.headers();
    if (parse_speculative_method(f.speculative) != SpeculativeMethod::Mtp) return headers;
    if (source.config.num_nextn_predict_layers < 1)
        bad_input(
            "--speculative mtp: {} has no MTP layers (its config.json's num_nextn_predict_layers "
            "is {}); use --speculative ngram or none",
            source.config.path, source.config.num_nextn_predict_layers);
    // The MTP layers' tensors are checked with the others, before any weight is read, and their
    // weights and latent cache are in the plan's figures.
    keep.config = source.config;
    keep.config.mtp_layers = keep.config.num_nextn_predict_layers;
    keep.weights = source.inventory(keep.config);
    headers.config = &keep.config;
    headers.weights = &keep.weights;
    return headers;
}

plan::RunPlan plan_run(const ModelSource& source, const EngineFlags& f) {
    RunHeaders keep;
    return plan::make_run_plan(run_flags(f), run_headers(source, f, keep), plan::probe_machine());
}

int64_t gpu_memory_in_use(const plan::RunPlan& p) {
    if (p.device != Device::Cuda) return -1;
    std::vector<int> seen;
    int64_t total = 0;
    for (int d : p.devices) {
        if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
        seen.push_back(d);
        uint64_t used = 0;
        if (!cuda_memory_in_use(d, &used)) return -1;
        total += static_cast<int64_t>(used);
    }
    return total;
}

LoadedEngine load_engine(ModelSource source, const plan::RunPlan& p, const LoadOptions& lo) {
    auto tell = [&](const std::string& what) {
        if (lo.phase) lo.phase(what);
    };
    // A model without MTP layers was refused by the plan (run_headers) and again by WorkerGroup.
    const bool mtp = lo.speculative.method == SpeculativeMethod::Mtp;
    LoadedEngine m;
    m.source = std::move(source);
    m.plan = p;
    WorkerGroupOptions wo;
    wo.tp = p.tp;
    wo.expert_parallel = p.expert_parallel;
    wo.threads = p.threads;
    wo.device = p.device;
    wo.devices = p.devices;
    wo.kv_blocks = p.kv_blocks;
    wo.kv_block_size = p.kv_block_size;
    wo.planned_kv_dtype = p.kv_dtype;
    wo.model.naive_context_tokens = p.naive_context_tokens;
    wo.mtp = mtp;
    wo.load_progress = lo.progress;
    if (lo.phase) wo.load_status = [&](const std::string& line) { tell(line); };
    tell("loading weights");
    m.workers = std::make_unique<WorkerGroup>(m.source.config, *m.source.checkpoint, wo);
    const LoadTimes& lt = m.workers->load_times();
    m.times.reading = lt.read_seconds;
    m.times.copying = lt.copy_seconds();
    m.times.bytes_read = lt.bytes_read;
    if (const CommGroup* g = m.workers->comm_group(); g && !g->measured_all_reduce().empty()) {
        m.plan.all_reduce.measured_two_shot_from = g->measured_two_shot_from();
        m.plan.all_reduce.measured = g->measured_all_reduce();
    }
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = p.max_num_batched_tokens;
    ec.scheduler.max_num_seqs = p.max_num_seqs;
    ec.max_model_len = p.max_model_len;
    ec.eos_ids = m.source.defaults.eos_ids;
    ec.defaults = m.source.defaults.sampling;
    ec.check_invariants = lo.check_invariants;
    ec.speculative = lo.speculative;
    // The engine's warm-up step, once, where a backend sizes workspaces in it (the GPU's).
    ec.warm_up = WarmUp::Auto;
    if (p.device == Device::Cuda) tell("warming up");
    const auto warm_start = std::chrono::steady_clock::now();
    m.engine = std::make_unique<Engine>(*m.workers, ec);
    m.times.warm_up =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count();
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
