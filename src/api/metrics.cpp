#include "api/metrics.h"

#include <fmt/format.h>

namespace myriad::api {

void Histogram::observe(double s) {
    size_t i = 0;
    while (i < kBounds.size() && s > kBounds[i]) ++i;
    ++counts_[i];
    sum_ += s;
    ++count_;
}

void Histogram::render(std::string& out, const char* name, const char* help) const {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        cum += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cum);
    }
    cum += counts_.back();
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name,
                       sum_, name, count_);
}

void Metrics::request_done(const std::string& endpoint, int status) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++requests_[{endpoint, status}];
}

void Metrics::tokens(int64_t prompt, int64_t cached, int64_t generated) {
    std::lock_guard<std::mutex> lock(mutex_);
    prompt_ += prompt;
    cached_ += cached;
    generated_ += generated;
}

void Metrics::time_to_first_token(double s) {
    std::lock_guard<std::mutex> lock(mutex_);
    ttft_.observe(s);
}

void Metrics::inter_token_latency(double s) {
    std::lock_guard<std::mutex> lock(mutex_);
    itl_.observe(s);
}

void Metrics::set_startup(std::vector<std::pair<std::string, double>> phases) {
    std::lock_guard<std::mutex> lock(mutex_);
    startup_ = std::move(phases);
}

std::string Metrics::render(const EngineStats& e, bool ready) const {
    std::string out;
    auto gauge = [&](const char* name, const char* help, int64_t v, const char* type = "gauge") {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
    };
    std::lock_guard<std::mutex> lock(mutex_);
    out +=
        "# HELP myriad_requests_total HTTP requests answered, by endpoint and status\n"
        "# TYPE myriad_requests_total counter\n";
    for (const auto& [key, n] : requests_)
        out += fmt::format("myriad_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first,
                           key.second, n);
    gauge("myriad_prompt_tokens_total", "prompt tokens of finished requests", prompt_, "counter");
    gauge("myriad_cached_prompt_tokens_total", "prompt tokens served from the prefix cache",
          cached_, "counter");
    gauge("myriad_generation_tokens_total", "tokens generated", generated_, "counter");
    if (!startup_.empty()) {
        out +=
            "# HELP myriad_startup_seconds seconds of serve's start to READY, by phase\n"
            "# TYPE myriad_startup_seconds gauge\n";
        for (const auto& [phase, secs] : startup_)
            out += fmt::format("myriad_startup_seconds{{phase=\"{}\"}} {:.3f}\n", phase, secs);
    }
    ttft_.render(out, "myriad_time_to_first_token_seconds", "time from request to first token");
    itl_.render(out, "myriad_inter_token_latency_seconds", "time between tokens of a stream");
    gauge("myriad_num_requests_running", "sequences running in the engine", e.running);
    gauge("myriad_num_requests_waiting", "sequences waiting for the engine", e.waiting);
    gauge("myriad_kv_blocks_used", "KV-cache blocks in use", e.blocks_used);
    gauge("myriad_kv_blocks_total", "KV-cache blocks in all", e.blocks_total);
    gauge("myriad_preemptions_total", "sequences preempted for lack of KV blocks", e.preemptions,
          "counter");
    gauge("myriad_engine_steps_total", "engine steps run", e.steps, "counter");
    gauge("myriad_engine_decode_steps_total",
          "engine steps in which every sequence decoded (no prefill chunk)", e.decode_steps,
          "counter");
    gauge("myriad_engine_decode_step_sequences_total",
          "sequences those decode steps ran (the sum of their batch sizes)",
          e.decode_step_sequences, "counter");
    out += fmt::format(
        "# HELP myriad_engine_decode_step_seconds_total seconds of those decode steps, from "
        "building the step to updating its sequences\n"
        "# TYPE myriad_engine_decode_step_seconds_total counter\n"
        "myriad_engine_decode_step_seconds_total {:.6f}\n",
        e.decode_step_seconds);
    // Speculative decoding, as vLLM's spec_decode counters (0 without --speculative).
    gauge("myriad_spec_decode_num_drafts_total", "sequence steps that verified a draft",
          e.spec_drafts, "counter");
    gauge("myriad_spec_decode_num_draft_tokens_total", "draft tokens verified", e.spec_draft_tokens,
          "counter");
    gauge("myriad_spec_decode_num_accepted_tokens_total", "draft tokens the model agreed with",
          e.spec_accepted_tokens, "counter");
    gauge("myriad_spec_decode_num_padding_tokens_total",
          "rows that padded shorter drafts to a step's longest (one shape: graph replay), dropped",
          e.spec_pad_rows, "counter");
    out += fmt::format(
        "# HELP myriad_spec_decode_acceptance_rate accepted / drafted tokens so far (0 before "
        "any draft)\n# TYPE myriad_spec_decode_acceptance_rate gauge\n"
        "myriad_spec_decode_acceptance_rate {:.6f}\n",
        e.spec_draft_tokens > 0 ? double(e.spec_accepted_tokens) / double(e.spec_draft_tokens)
                                : 0.0);
    gauge("myriad_ready", "1 once the model is loaded and warm", ready ? 1 : 0);
    return out;
}

}  // namespace myriad::api
