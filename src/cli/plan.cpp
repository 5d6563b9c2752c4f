// myriad plan: will MODEL fit these GPUs, and how. Works from config.json and the quantisation
// config; uses the safetensors headers when the weights are on disk (or on the hub, fetched by
// HTTP Range) to count the bytes exactly.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/commands.h"
#include "cli/engine_setup.h"
#include "cli/model_path.h"
#include "cli/model_source.h"
#include "cli/plan_source.h"
#include "ops/backend.h"
#include "plan/memory_plan.h"
#include "plan/nvml_gpus.h"
#include "plan/plan_report.h"
#include "plan/run_plan.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

struct PlanArgs {
    std::string model;
    std::string gpus;
    int64_t context = 0;
    int64_t concurrency = 1;
    EngineFlags engine;  // serve's engine flags: the run plan below is serve's for the same ones
    bool json = false;
};

// The folder of a local model with its weights, opened once as serve opens it; none for a hub
// model or a folder of configs.
std::optional<ModelSource> local_source(const std::string& model) {
    namespace fs = std::filesystem;
    std::string path = model.ends_with(".gguf") ? model : model_path(model);
    std::error_code ec;
    if (fs::is_regular_file(path, ec) && path.ends_with(".json"))
        path = fs::path(path).parent_path().string();
    if (!path.ends_with(".gguf") && !fs::exists(fs::path(path) / "config.json", ec)) return {};
    try {
        return open_model_source(path);
    } catch (const Error&) {
        return {};  // no weights here (configs only, a download in progress): the config plans
    }
}

// The run plan of serve with the same flags: on this machine's GPUs (CUDA's view, as serve
// sees them), or on the ones --gpus names (their kernels unchecked).
nlohmann::ordered_json run_section(const PlanArgs& a, const PlanModel& m, const ModelSource* source,
                                   const GpuChoice& g, std::string* text, std::string* error) {
    plan::MachineGpus machine;
    if (!a.gpus.empty() && a.gpus != "auto") {
        for (size_t i = 0; i < g.gpus.size(); ++i) {
            GpuInfo info;
            info.name = g.gpus[i].name;
            info.index = static_cast<int>(i);
            info.memory = g.gpus[i].bytes;
            machine.gpus.push_back(info);
        }
        machine.source = g.source;
    } else {
        machine = plan::probe_machine();
    }
    plan::ModelHeaders h;
    RunHeaders keep;
    if (source) {
        h = run_headers(*source, a.engine, keep);
    } else {
        h.path = m.name;
        h.config = &m.config;
        h.weights = &m.weights;
    }
    try {
        const plan::RunPlan run = plan::make_run_plan(run_flags(a.engine), h, machine);
        *text = plan::run_plan_text(run);
        return plan::run_plan_json(run);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::BadInput) throw;
        *error = e.what();
        return {{"error", *error}};
    }
}

int run_plan(const PlanArgs& a) {
    if (a.context < 0) bad_input("--context {} must be positive", a.context);
    if (a.concurrency < 1) bad_input("--concurrency {} must be at least 1", a.concurrency);
    check_engine_flags(a.engine);
    const KvCacheDtype kv = parse_kv_cache_dtype(a.engine.kv_cache_dtype);
    std::optional<ModelSource> source = local_source(a.model);
    PlanModel m;
    if (source) {
        m.name = a.model;
        m.config = source->config;
        m.weights = source->weights;
        if (!source->checkpoint->gguf()) m.predicted = plan::weights_from_config(m.config);
    } else {
        m = load_plan_model(a.model);
    }
    GpuChoice g = choose_gpus(a.gpus);
    plan::PlanOptions o;
    o.gpus = g.gpus;
    o.context = a.context;
    o.concurrency = a.concurrency;
    o.kv_cache_dtype = kv;
    o.max_num_seqs = a.engine.max_num_seqs;
    o.max_batched_tokens = a.engine.max_num_batched_tokens;
    o.naive_context_tokens = a.engine.naive_context_tokens;
    const plan::Plan p = plan::make_plan(m.config, m.weights, o);
    std::string run_text, run_error;
    const nlohmann::ordered_json run =
        run_section(a, m, source ? &*source : nullptr, g, &run_text, &run_error);
    plan::PlanSubject s{m.name, &m.config, &m.weights, m.predicted ? &*m.predicted : nullptr,
                        g.gpus, g.source};
    // GPUs found here: how they are connected too (NVLink or PCIe, NUMA nodes, peer access).
    std::vector<std::string> topology;
    if (g.source == "NVML") topology = topology_lines(gpu_topology());
    if (a.json) {
        nlohmann::ordered_json j = plan::plan_json(s, p);
        if (!topology.empty()) j["topology"] = topology;
        j["run"] = run;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s", plan::plan_text(s, p).c_str());
        if (!topology.empty()) std::printf("\n");
        for (const std::string& line : topology) std::printf("%s\n", line.c_str());
        if (!run_text.empty()) std::printf("\n%s", run_text.c_str());
    }
    // What serve would stop with (exit 2) for these flags; the layouts above say what fits.
    if (!run_error.empty() && !a.json)
        std::printf("\nrun plan\n  serve with these flags stops before loading: %s\n",
                    run_error.c_str());
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
    // serve's engine flags: the layouts above are sized with them, and the run plan printed
    // last is the one `myriad serve MODEL` with the same flags prints and runs.
    add_engine_flags(app, a->engine);
    app.add_option("--kv-blocks", a->engine.kv_blocks, "as serve --kv-blocks");
    app.add_flag("--json", a->json, "print the plan as JSON");
    return [a] { return run_plan(*a); };
}

}  // namespace myriad::cli
