// myriad plan: will MODEL fit these GPUs, and how. Works from config.json and the quantisation
// config; uses the safetensors headers when the weights are on disk (or on the hub, fetched by
// HTTP Range) to count the bytes exactly.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/plan_source.h"
#include "ops/backend.h"
#include "plan/memory_plan.h"
#include "plan/nvml_gpus.h"
#include "plan/plan_report.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

struct PlanArgs {
    std::string model;
    std::string gpus;
    int64_t context = 0;
    int64_t concurrency = 1;
    std::string kv_cache_dtype = "auto";
    plan::PlanOptions sizes;  // max_num_seqs, max_batched_tokens, naive_context_tokens
    bool json = false;
};

int run_plan(const PlanArgs& a) {
    if (a.context < 0) bad_input("--context {} must be positive", a.context);
    if (a.concurrency < 1) bad_input("--concurrency {} must be at least 1", a.concurrency);
    if (a.sizes.max_num_seqs < 1)
        bad_input("--max-num-seqs {} must be at least 1", a.sizes.max_num_seqs);
    if (a.sizes.max_batched_tokens < 1)
        bad_input("--max-num-batched-tokens {} must be at least 1", a.sizes.max_batched_tokens);
    if (a.sizes.naive_context_tokens < 1)
        bad_input("--naive-context-tokens {} must be at least 1", a.sizes.naive_context_tokens);
    const KvCacheDtype kv = parse_kv_cache_dtype(a.kv_cache_dtype);
    PlanModel m = load_plan_model(a.model);
    GpuChoice g = choose_gpus(a.gpus);
    plan::PlanOptions o;
    o.gpus = g.gpus;
    o.context = a.context;
    o.concurrency = a.concurrency;
    o.kv_cache_dtype = kv;
    o.max_num_seqs = a.sizes.max_num_seqs;
    o.max_batched_tokens = a.sizes.max_batched_tokens;
    o.naive_context_tokens = a.sizes.naive_context_tokens;
    const plan::Plan p = plan::make_plan(m.config, m.weights, o);
    plan::PlanSubject s{m.name, &m.config, &m.weights, m.predicted ? &*m.predicted : nullptr,
                        g.gpus, g.source};
    // GPUs found here: how they are connected too (NVLink or PCIe, NUMA nodes, peer access).
    std::vector<std::string> topology;
    if (g.source == "NVML") topology = topology_lines(gpu_topology());
    if (a.json) {
        nlohmann::ordered_json j = plan::plan_json(s, p);
        if (!topology.empty()) j["topology"] = topology;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s", plan::plan_text(s, p).c_str());
        if (!topology.empty()) std::printf("\n");
        for (const std::string& line : topology) std::printf("%s\n", line.c_str());
    }
    // A script can test whether the model fits the GPUs given (or found).
    if (!p.chosen && !g.gpus.empty()) {
        std::fprintf(stderr, "myriad: %s: no layout fits %s\n", m.name.c_str(),
                     plan::describe_gpus(g.gpus).c_str());
        return 1;
    }
    return 0;
}

}  // namespace

GpuChoice choose_gpus(const std::string& spec) {
    GpuChoice g;
    if (!spec.empty() && spec != "auto") {
        g.gpus = plan::parse_gpu_spec(spec);
        g.source = "--gpus " + spec;
        return g;
    }
    plan::GpuProbe probe = plan::probe_gpus();
    if (!probe.gpus.empty()) {
        g.gpus = probe.gpus;
        g.source = "NVML";
        return g;
    }
    if (spec == "auto")
        bad_input("--gpus auto: no GPUs found: {}; name them instead, e.g. --gpus 8x96GB",
                  probe.note);
    g.source =
        fmt::format("no GPUs given and none found ({}); pass --gpus, e.g. 8x96GB", probe.note);
    return g;
}

Run add_plan(CLI::App& app) {
    auto a = std::make_shared<PlanArgs>();
    app.add_option("model", a->model,
                   "model folder, config.json, HF cache entry or ORG/NAME[@REVISION] on the hub")
        ->required();
    app.add_option("--gpus", a->gpus,
                   "auto (NVML), or e.g. 8x96GB, 8xH200, 4x141GiB,4xH100; presets: H100, H200, "
                   "B200, RTX-PRO-6000 (default: auto when GPUs are found)");
    app.add_option("--context", a->context,
                   "tokens per sequence (default: the model's max_position_embeddings)");
    app.add_option("--concurrency", a->concurrency, "sequences at once (default 1)");
    app.add_option("--kv-cache-dtype", a->kv_cache_dtype, "auto, bf16 or fp8 (default auto)");
    app.add_option("--max-num-seqs", a->sizes.max_num_seqs,
                   fmt::format("sequences a step may hold, for the logits reserve (default {})",
                               a->sizes.max_num_seqs));
    app.add_option("--max-num-batched-tokens", a->sizes.max_batched_tokens,
                   fmt::format("tokens a step may hold, for the activation reserve (default {})",
                               a->sizes.max_batched_tokens));
    app.add_option("--naive-context-tokens", a->sizes.naive_context_tokens,
                   fmt::format("context tokens one prefill attention call gathers, for its "
                               "workspace (default {})",
                               a->sizes.naive_context_tokens));
    app.add_flag("--json", a->json, "print the plan as JSON");
    return [a] { return run_plan(*a); };
}

}  // namespace myriad::cli
