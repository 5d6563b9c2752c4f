// myriad serve: the OpenAI-compatible server. The HTTP listener starts first (so /health reports
// load progress), then the model loads and warms up; SIGTERM or SIGINT drains: new requests get
// 503, running ones finish (or are cancelled after --drain-timeout), and the process exits 0.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat_handler.h"
#include "api/generation_core.h"
#include "api/http_server.h"
#include "api/prompt_renderer.h"
#include "api/server_state.h"
#include "cli/commands.h"
#include "cli/engine_setup.h"
#include "format/read_speed.h"
#include "model/model_config.h"
#include "ops/backend.h"
#include "plan/memory_plan.h"
#include "plan/run_plan.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/sd_notify.h"
#include "util/text_file.h"

namespace myriad::cli {

namespace {

// Bytes serve reads cold at start to know the disk's rate (about a second on one NVMe disk).
constexpr uint64_t kDiskSampleBytes = uint64_t{1} << 30;

struct ServeArgs {
    std::string model;
    std::string host = "127.0.0.1";
    int port = 8000;
    std::string api_key;
    std::string served_model_name;
    int64_t max_queue = 256;
    int64_t responses_store = 1000;
    int64_t max_request_bytes = int64_t{32} << 20;
    int64_t max_unsent_bytes = int64_t{1} << 20;
    double stream_write_timeout = 30;
    double request_read_timeout = 30;
    int64_t max_connections = 0;
    EngineFlags engine;
    std::string chat_template;
    std::string tool_call_parser;
    std::string reasoning_parser;
    double drain_timeout = 30;
    bool enable_test_output = false;
    bool json = false;  // the run plan as JSON on stdout
    // GB/s the disk reads the model's files (`myriad inspect --read-speed`); < 0: a short sample
    // at start measures it; 0: no comparison.
    double disk_read_rate = -1;
};

// Seconds since `t`.
double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The start-up breakdown as (phase, seconds), for the log line, the JSON line and /metrics.
std::vector<std::pair<std::string, double>> startup_phases(const StartupTimes& t) {
    std::vector<std::pair<std::string, double>> out = {{"planning", t.planning}};
    if (t.disk_sample > 0) out.emplace_back("disk_sample", t.disk_sample);
    out.insert(out.end(), {{"reading", t.reading},
                           {"copying", t.copying},
                           {"warm_up", t.warm_up},
                           {"graph_capture", t.graph_capture}});
    double parts = 0;
    for (const auto& p : out) parts += p.second;
    out.emplace_back("other", std::max(0.0, t.total - parts));  // tokenizer, listener, KV sizing
    out.emplace_back("total", t.total);
    return out;
}

void check_args(const ServeArgs& a) {
    check_engine_flags(a.engine);
    if (a.max_queue < 0) bad_input("--max-queue {} must be at least 0", a.max_queue);
    if (a.responses_store < 0)
        bad_input("--responses-store {} must be at least 0", a.responses_store);
    if (a.max_request_bytes < 1024)
        bad_input("--max-request-bytes {} must be at least 1024", a.max_request_bytes);
    if (a.max_unsent_bytes < 4096)
        bad_input("--max-unsent-bytes {} must be at least 4096", a.max_unsent_bytes);
    if (a.max_connections < 0)
        bad_input("--max-connections {} must be at least 1 (or 0: the default)", a.max_connections);
    if (!(a.request_read_timeout >= 1))
        bad_input("--request-read-timeout {} must be at least 1 (seconds)", a.request_read_timeout);
    if (!(a.stream_write_timeout >= 1))
        bad_input("--stream-write-timeout {} must be at least 1 (seconds)", a.stream_write_timeout);
    if (a.port < 0 || a.port > 65535) bad_input("--port {} must be in 0..65535", a.port);
    for (const std::string& p : {a.tool_call_parser})
        if (!p.empty() && p != "kimi_k2" && p != "deepseek_v3" && p != "deepseek_v31")
            bad_input("--tool-call-parser {}: use kimi_k2, deepseek_v3 or deepseek_v31", p);
    if (!a.reasoning_parser.empty() && a.reasoning_parser != "kimi_k2" &&
        a.reasoning_parser != "deepseek_r1" && a.reasoning_parser != "deepseek_v3")
        bad_input("--reasoning-parser {}: use kimi_k2, deepseek_r1 or deepseek_v3",
                  a.reasoning_parser);
}

// Waits for SIGTERM or SIGINT (blocked in every thread, so only this wait sees them).
int wait_for_signal(const sigset_t& set) {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
}

int run_serve(ServeArgs& a) {
    const auto serve_start = std::chrono::steady_clock::now();
    check_args(a);
    const std::string dir = resolve_model(a.model);
    if (a.api_key.empty())
        if (const char* env = std::getenv("MYRIAD_API_KEY")) a.api_key = env;
    // The folder opened once, and the whole run decided before the listener starts or any
    // weight is read: an impossible combination exits 2 here with what would work.
    ModelSource source = open_model_source(dir);
    const ModelConfig& config = source.config;
    const plan::RunPlan run = plan_run(source, a.engine);
    StartupTimes times;
    times.planning = since(serve_start);
    if (a.json)
        std::printf("%s\n", plan::run_plan_json(run).dump().c_str());
    else
        log::info("{}", run_plan_text(run));
    std::fflush(stdout);

    api::ServerOptions o;
    o.served_model_name = a.served_model_name.empty() ? a.model.empty() ? "myriad-tiny" : a.model
                                                      : a.served_model_name;
    o.model_type = config.model_type;
    o.max_num_seqs = a.engine.max_num_seqs;
    o.max_queue = a.max_queue;
    o.responses_store = static_cast<size_t>(a.responses_store);
    o.max_request_bytes = static_cast<size_t>(a.max_request_bytes);
    o.max_unsent_bytes = static_cast<size_t>(a.max_unsent_bytes);
    o.stream_write_timeout = a.stream_write_timeout;
    o.request_read_timeout = a.request_read_timeout;
    o.max_connections = a.max_connections;
    o.api_key = a.api_key;
    o.tool_call_parser = a.tool_call_parser;
    o.reasoning_parser = a.reasoning_parser;
    if (!a.chat_template.empty())
        o.chat_template = read_text_file(a.chat_template, "--chat-template");
    o.enable_test_output = a.enable_test_output;
    if (a.enable_test_output)
        log::warn(
            "--enable-test-output: requests may dictate the output text (a test facility; "
            "never use it in production)");

    // Signals go to the waiting thread only; a dead client's socket must not kill the process.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);

    api::ServerState state(o);
    api::HttpServer http(state);
    const int port = http.bind(a.host, a.port);
    std::thread listener([&] { http.run(); });
    auto stop_listener = [&] {
        http.stop();
        if (listener.joinable()) listener.join();
    };

    // Load progress for /health and, under systemd (Type=notify), for `systemctl status`.
    auto phase = [&](const std::string& p) {
        state.set_phase(p);
        sd_notify("STATUS=" + p);
    };
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<api::PromptRenderer> renderer;
    LoadedEngine model;
    ReadSpeed disk;
    try {
        phase("loading tokenizer");
        tokenizer = Tokenizer::load(dir);
        renderer = std::make_unique<api::PromptRenderer>(dir, config.model_type, o.chat_template);
        const int64_t before = gpu_memory_in_use(run);
        // The engine's warm-up step runs once, inside load_engine, on GPUs: a step as large as
        // a step can be (a full --max-num-batched-tokens chunk and max_num_seqs sequences), so
        // the backend's workspaces reach their size now, not under the first burst of load,
        // and memory use is settled before it is measured and the server reports ready.
        // The yardstick of the load rate: the disk's cold sequential read of the same files
        // (a short sample unless --disk-read-rate gives the `inspect --read-speed` figure).
        std::vector<std::string> files;
        for (const auto& f : source.checkpoint->files()) files.push_back(f->path());
        if (a.disk_read_rate < 0 && !files.empty()) {
            phase("measuring the disk's read rate");
            const auto t0 = std::chrono::steady_clock::now();
            disk = measure_read_speed(files, kDiskSampleBytes);
            times.disk_sample = since(t0);
            a.disk_read_rate = disk.bytes > 0 ? disk.gb_per_s() : 0;
        }
        LoadOptions lo;
        lo.phase = [&](const std::string& p) { phase(p); };
        lo.progress = log::level() <= log::Level::Info;
        lo.speculative = speculative_config(a.engine.speculative, a.engine.num_speculative_tokens,
                                            a.engine.draft_model);
        model = load_engine(std::move(source), run, lo);
        if (!model.plan.all_reduce.measured.empty())
            log::info(
                "all-reduce: two-shot from {} by default, {} as measured ({}); the "
                "measured crossover runs",
                plan::size_label(model.plan.all_reduce.two_shot_from),
                plan::size_label(model.plan.all_reduce.measured_two_shot_from),
                model.plan.all_reduce.measured);
        // What the GPUs hold now against the plan: a plan that is off is said, with the gap.
        const int64_t after = gpu_memory_in_use(run);
        if (before >= 0 && after >= 0) {
            const std::string off = plan::memory_check(run, after - before);
            if (off.empty())
                log::info("memory: {} in use on the GPUs after warm-up, as planned",
                          plan::gb(after - before));
            else
                log::warn("{}", off);
        }
        Engine* engine = model.engine.get();
        engine->start();
        api::LoadedServerModel lm;
        lm.engine = engine;
        lm.tokenizer = tokenizer.get();
        lm.renderer = renderer.get();
        lm.eos_ids = model.defaults().eos_ids;
        lm.max_model_len = engine->max_model_len();
        times.reading = model.times.reading;
        times.copying = model.times.copying;
        times.warm_up = model.times.warm_up;
        times.bytes_read = model.times.bytes_read;
        times.graph_capture = cuda_graph_capture_seconds();
        times.total = since(serve_start);
        state.metrics().set_startup(startup_phases(times));
        state.set_ready(lm);
    } catch (...) {
        stop_listener();
        throw;
    }
    const double gb = static_cast<double>(model.workers->weight_bytes_all_ranks()) / 1e9;
    const double secs = model.workers->load_seconds();
    log::info(
        "weights: {:.2f} GB held over {} rank(s), loaded in {:.1f} s ({:.2f} GB/s; the KV "
        "cache allocated too)",
        gb, model.workers->options().tp, secs, gb / std::max(secs, 1e-9));
    // The load against the disk: the files' bytes read per second of the whole load.
    if (times.bytes_read > 0) {
        const double read_gb = static_cast<double>(times.bytes_read) / 1e9;
        const double rate = read_gb / std::max(secs, 1e-9);
        const std::string against =
            a.disk_read_rate > 0
                ? fmt::format("{:.0f}% of the disk's {:.2f} GB/s ({})",
                              100 * rate / a.disk_read_rate, a.disk_read_rate,
                              disk.bytes > 0 ? fmt::format("a {:.2f} GB sample at start, {}",
                                                           static_cast<double>(disk.bytes) / 1e9,
                                                           disk.cache_note())
                                             : std::string("--disk-read-rate"))
                : std::string(
                      "the disk's rate unknown (--disk-read-rate GBPS from `myriad "
                      "inspect --read-speed`)");
        log::info("load rate: {:.2f} GB of the files read once in {:.1f} s: {:.2f} GB/s, {}",
                  read_gb, secs, rate, against);
    }
    std::string breakdown;
    for (const auto& [p, v] : startup_phases(times))
        breakdown += fmt::format("{}{} {:.2f} s", breakdown.empty() ? "" : ", ", p, v);
    log::info("startup: {}{}", breakdown,
              a.disk_read_rate > 0 ? fmt::format(" (the disk reads {:.2f} GB/s)", a.disk_read_rate)
                                   : std::string());
    if (a.json) {
        nlohmann::json j;
        for (const auto& [p, v] : startup_phases(times)) j[p + "_s"] = v;
        j["bytes_read"] = times.bytes_read;
        if (a.disk_read_rate > 0) j["disk_read_gb_per_s"] = a.disk_read_rate;
        std::printf("%s\n", nlohmann::json{{"startup", j}}.dump().c_str());
        std::fflush(stdout);
    }
    log::info(
        "serving '{}' ({}) on http://{}:{}/v1 — max model len {}, {} KV blocks, tool parser "
        "'{}', reasoning parser '{}'{}",
        o.served_model_name, dir, a.host, port, model.engine->max_model_len(),
        model.engine->stats().blocks_total, api::tool_parser_name(o), api::reasoning_parser_name(o),
        o.api_key.empty() ? "" : "; API key required");

    sd_notify(
        fmt::format("READY=1\nSTATUS=serving {} on {}:{}", o.served_model_name, a.host, port));
    const int sig = wait_for_signal(set);
    sd_notify("STOPPING=1\nSTATUS=draining");
    log::info("signal {}: draining ({} sequences in flight, up to {} s)", sig, state.in_flight(),
              a.drain_timeout);
    state.start_draining();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(a.drain_timeout * 1000));
    while (state.in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (state.in_flight() > 0) {
        log::warn("drain timeout: cancelling {} sequences", state.in_flight());
        state.cancel_all();
        const auto hard = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (state.in_flight() > 0 && std::chrono::steady_clock::now() < hard)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop_listener();
    log::info("stopped");
    return 0;
}

}  // namespace

Run add_serve(CLI::App& app) {
    auto a = std::make_shared<ServeArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--host", a->host,
                   "address to listen on (default 127.0.0.1: this machine only)");
    app.add_option("--port", a->port, "port (default 8000; 0 = any free port)");
    app.add_option("--api-key", a->api_key,
                   "require 'Authorization: Bearer KEY' on /v1/* (default: $MYRIAD_API_KEY)");
    app.add_option("--served-model-name", a->served_model_name,
                   "the model name clients send (default: MODEL as given, or myriad-tiny)");
    app.add_option("--max-queue", a->max_queue,
                   "sequences waiting beyond --max-num-seqs before 429 (default 256)");
    app.add_option("--responses-store", a->responses_store,
                   "Responses API replies kept in memory for previous_response_id, least "
                   "recently used dropped first (default 1000; 0: none)");
    app.add_option("--max-request-bytes", a->max_request_bytes,
                   "largest request body; larger gets 413 (default 32 MiB)");
    app.add_option("--max-unsent-bytes", a->max_unsent_bytes,
                   "a stream's output its client has not read before its sequences pause "
                   "(default 1 MiB)");
    app.add_option("--request-read-timeout", a->request_read_timeout,
                   "seconds a client has to send a whole request, headers and body, however "
                   "slowly its bytes come (default 30)");
    app.add_option("--max-connections", a->max_connections,
                   "open connections; past it the oldest one still sending its request (or idle) "
                   "is closed (default: 4 x (--max-num-seqs + --max-queue + 8), at least 1024)");
    app.add_option("--stream-write-timeout", a->stream_write_timeout,
                   "seconds a client may read nothing of its stream before it is cancelled "
                   "(default 30)");
    app.add_option("--kv-blocks", a->engine.kv_blocks,
                   "KV-cache blocks of 16 tokens per rank (default: what "
                   "--gpu-memory-utilization leaves on the GPU, --kv-cache-memory on the CPU)");
    app.add_option("--chat-template", a->chat_template,
                   "a Jinja chat template file to use instead");
    app.add_option("--tool-call-parser", a->tool_call_parser,
                   "kimi_k2, deepseek_v3 or deepseek_v31 (default: from model_type)");
    app.add_option("--reasoning-parser", a->reasoning_parser,
                   "kimi_k2, deepseek_r1 or deepseek_v3 (default: from model_type)");
    add_engine_flags(app, a->engine);
    app.add_option("--disk-read-rate", a->disk_read_rate,
                   "GB/s the disk reads the model's files (`myriad inspect --read-speed MODEL`), "
                   "the load rate's yardstick (default: a 1 GB cold sample at start; 0: none)");
    app.add_flag("--json", a->json,
                 "print the run plan as one line of JSON on stdout at start (as `myriad plan "
                 "MODEL --json` with the same flags), instead of the table in the log, and the "
                 "start-up breakdown as a second line at READY ({\"startup\": ...})");
    app.add_option(
        "--drain-timeout", a->drain_timeout,
        "seconds SIGTERM waits for running requests before cancelling them (default 30)");
    app.add_flag("--enable-test-output", a->enable_test_output,
                 "TEST FACILITY: requests may carry 'test_output', a text the engine emits instead "
                 "of sampling (forced tokens), to test parsers end to end; never in production");
    return [a] { return run_serve(*a); };
}

}  // namespace myriad::cli
