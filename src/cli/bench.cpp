// myriad bench URL: a streaming load generator for any OpenAI-compatible server (myriad, vLLM,
// SGLang, llama.cpp). Requests are sent by up to --concurrency workers, arriving all at once or
// as a Poisson process of --request-rate per second; each is timed token by token: time to first
// token (TTFT), time per output token after the first (TPOT), inter-token latency (ITL) and the
// whole latency; then request and output-token throughput and errors. Percentiles interpolate
// linearly between order statistics (numpy's default). --json-schema FILE sends every request
// with response_format json_schema (structured output), to compare the time per output token
// with and without constraints.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "cli/bench_client.h"
#include "cli/commands.h"
#include "format/json_file.h"
#include "hub/http_client.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    std::string url;
    std::string model;
    int concurrency = 8;
    int requests = 64;
    int input_len = 128;
    int output_len = 128;
    double request_rate = 0;  // 0: no pacing
    std::string dataset;
    std::string endpoint = "completions";
    std::string api_key;
    uint64_t seed = 0;
    double timeout = 600;
    bool json = false;
    std::string json_schema;  // a schema file: every request constrained to it
};

struct Prompt {
    nlohmann::json body;  // the request without model/stream fields
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The server's base: "http://h:p" from "http://h:p", "http://h:p/" or "http://h:p/v1".
std::string base_url(std::string url) {
    while (url.ends_with('/')) url.pop_back();
    if (url.ends_with("/v1")) url.resize(url.size() - 3);
    if (!url.starts_with("http://") && !url.starts_with("https://"))
        bad_input("URL {}: expected http://HOST:PORT (the server's address)", url);
    return url;
}

// A random prompt of about `words` tokens: common English words (most are one token in the
// BPE vocabularies of these models), so the server's own count (usage) is what is reported.
std::string random_prompt(std::mt19937_64& rng, int words) {
    static const char* vocab[] = {
        "the", "of",   "and", "to",  "in",   "is",   "that", "for",   "it",  "as",   "was", "with",
        "be",  "by",   "on",  "not", "he",   "this", "are",  "or",    "his", "from", "at",  "which",
        "but", "have", "an",  "had", "they", "you",  "were", "their", "one", "all",  "we",  "can"};
    std::string out;
    for (int i = 0; i < words; ++i) {
        out += (i ? " " : "");
        out += vocab[rng() % (sizeof(vocab) / sizeof(vocab[0]))];
    }
    return out;
}

std::vector<Prompt> load_prompts(const BenchArgs& a) {
    std::vector<Prompt> prompts;
    std::mt19937_64 rng(a.seed);
    if (a.dataset.empty()) {
        for (int i = 0; i < a.requests; ++i) {
            Prompt p;
            const std::string text = random_prompt(rng, a.input_len);
            if (a.endpoint == "chat")
                p.body["messages"] = {{{"role", "user"}, {"content", text}}};
            else
                p.body["prompt"] = text;
            p.body["max_tokens"] = a.output_len;
            prompts.push_back(std::move(p));
        }
        return prompts;
    }
    // JSONL: {"prompt": TEXT} or {"messages": [...]}, optional "max_tokens"/"output_len".
    std::ifstream in(a.dataset);
    if (!in) bad_input("--dataset {}: cannot read the file", a.dataset);
    std::vector<Prompt> all;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto j = parse_json(line, fmt::format("{} line {}", a.dataset, n));
        Prompt p;
        if (j.contains("messages") && j["messages"].is_array()) {
            if (a.endpoint != "chat")
                bad_input("--dataset {} line {}: \"messages\" needs --endpoint chat", a.dataset, n);
            p.body["messages"] = j["messages"];
        } else if (j.contains("prompt") && j["prompt"].is_string()) {
            if (a.endpoint == "chat")
                p.body["messages"] = {{{"role", "user"}, {"content", j["prompt"]}}};
            else
                p.body["prompt"] = j["prompt"];
        } else {
            bad_input(
                "--dataset {} line {}: expected {{\"prompt\": TEXT}} or {{\"messages\": "
                "[...]}}",
                a.dataset, n);
        }
        int64_t max_tokens = a.output_len;
        for (const char* k : {"max_tokens", "output_len"})
            if (j.contains(k) && j[k].is_number_integer()) max_tokens = j[k].get<int64_t>();
        p.body["max_tokens"] = max_tokens;
        all.push_back(std::move(p));
    }
    if (all.empty()) bad_input("--dataset {}: no prompts", a.dataset);
    for (int i = 0; i < a.requests; ++i)
        prompts.push_back(all[static_cast<size_t>(i) % all.size()]);
    return prompts;
}

// The first model the server lists, when --model is not given.
std::string first_model(const std::string& base, const std::string& api_key) {
    hub::HttpSettings s;
    s.timeout_s = 10;
    s.retries = 0;
    s.token = api_key;
    hub::HttpRequest req;
    req.url = base + "/v1/models";
    const hub::HttpResponse r = hub::http_once(req, s);
    if (r.status != 200)
        bad_input("{}: {} (is the server up? pass --model to skip this)", req.url, r.describe());
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].contains("id"))
        bad_input("{}: no models listed; pass --model", req.url);
    return j["data"][0]["id"].get<std::string>();
}

nlohmann::ordered_json stats(const std::vector<double>& v) {
    nlohmann::ordered_json j;
    j["mean"] = mean(v);
    j["p50"] = percentile(v, 50);
    j["p90"] = percentile(v, 90);
    j["p99"] = percentile(v, 99);
    return j;
}

int run_bench(BenchArgs& a) {
    if (a.concurrency < 1) bad_input("--concurrency {} must be at least 1", a.concurrency);
    if (a.requests < 1) bad_input("--requests {} must be at least 1", a.requests);
    if (a.input_len < 1 || a.output_len < 1)
        bad_input("--input-len and --output-len must be at least 1");
    if (a.request_rate < 0) bad_input("--request-rate {} must be positive", a.request_rate);
    if (a.endpoint != "completions" && a.endpoint != "chat")
        bad_input("--endpoint {}: use completions or chat", a.endpoint);
    if (a.api_key.empty())
        if (const char* k = std::getenv("OPENAI_API_KEY")) a.api_key = k;
    const std::string base = base_url(a.url);
    if (a.model.empty()) a.model = first_model(base, a.api_key);
    const std::vector<Prompt> prompts = load_prompts(a);
    nlohmann::json response_format;
    if (!a.json_schema.empty())
        response_format = {
            {"type", "json_schema"},
            {"json_schema",
             {{"name", "bench"},
              {"schema", nlohmann::json::parse(read_json_file(a.json_schema).dump())}}}};
    const std::string url =
        base + (a.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions");

    // Arrival times: all at 0, or a Poisson process (exponential gaps) of request_rate per s.
    std::vector<double> arrival(prompts.size(), 0.0);
    if (a.request_rate > 0) {
        std::mt19937_64 rng(a.seed + 1);
        std::exponential_distribution<double> gap(a.request_rate);
        double t = 0;
        for (auto& x : arrival) {
            x = t;
            t += gap(rng);
        }
    }
    std::vector<StreamTiming> results(prompts.size());
    std::atomic<size_t> next{0};
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < std::min<int>(a.concurrency, a.requests); ++w) {
        workers.emplace_back([&] {
            for (size_t i; (i = next++) < prompts.size();) {
                std::this_thread::sleep_until(start +
                                              std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(arrival[i])));
                nlohmann::json body = prompts[i].body;
                body["model"] = a.model;
                body["stream"] = true;
                body["stream_options"] = {{"include_usage", true}};
                body["ignore_eos"] = true;  // vLLM's extension: exactly max_tokens tokens
                body["temperature"] = 0;
                if (!response_format.is_null()) body["response_format"] = response_format;
                results[i] = stream_request(url, body, a.api_key, a.timeout);
            }
        });
    }
    for (auto& t : workers) t.join();
    const double duration = std::chrono::duration<double>(Clock::now() - start).count();

    std::vector<double> ttft, tpot, itl, e2e;
    int64_t ok = 0, out_tokens = 0, in_tokens = 0;
    std::map<std::string, int> errors;
    for (const auto& r : results) {
        if (!r.ok) {
            ++errors[r.error];
            continue;
        }
        ++ok;
        const int64_t n = r.completion_tokens > 0 ? r.completion_tokens : r.chunks;
        out_tokens += n;
        in_tokens += r.prompt_tokens;
        ttft.push_back(r.ttft_s);
        e2e.push_back(r.latency_s);
        if (n > 1) tpot.push_back((r.latency_s - r.ttft_s) / static_cast<double>(n - 1));
        itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    }
    nlohmann::ordered_json j;
    j["url"] = url;
    j["model"] = a.model;
    j["concurrency"] = a.concurrency;
    j["request_rate"] =
        a.request_rate > 0 ? nlohmann::ordered_json(a.request_rate) : nlohmann::ordered_json("inf");
    j["requests"] = a.requests;
    j["json_schema"] = a.json_schema.empty() ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(a.json_schema);
    j["completed"] = ok;
    j["failed"] = a.requests - ok;
    j["duration_s"] = duration;
    j["input_tokens"] = in_tokens;
    j["output_tokens"] = out_tokens;
    j["request_throughput"] = static_cast<double>(ok) / duration;
    j["output_throughput"] = static_cast<double>(out_tokens) / duration;
    j["ttft_s"] = stats(ttft);
    j["tpot_s"] = stats(tpot);
    j["itl_s"] = stats(itl);
    j["e2e_latency_s"] = stats(e2e);
    nlohmann::ordered_json errs = nlohmann::ordered_json::object();
    for (const auto& [e, n] : errors) errs[e] = n;
    j["errors"] = errs;
    nlohmann::ordered_json per = nlohmann::ordered_json::array();
    for (const auto& r : results) {
        nlohmann::ordered_json q;
        q["ok"] = r.ok;
        if (!r.ok) q["error"] = r.error;
        q["ttft_s"] = r.ttft_s;
        q["latency_s"] = r.latency_s;
        q["prompt_tokens"] = r.prompt_tokens;
        q["completion_tokens"] = r.completion_tokens;
        q["chunks"] = r.chunks;  // SSE events carrying text (ITL is measured between these)
        q["itl_s"] = r.itl;
        per.push_back(q);
    }
    j["per_request"] = per;
    if (a.json) {
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        auto ms = [](double s) { return fmt::format("{:.2f}", s * 1000); };
        std::printf("%s, model %s, concurrency %d, request rate %s\n", url.c_str(), a.model.c_str(),
                    a.concurrency,
                    a.request_rate > 0 ? fmt::format("{}/s", a.request_rate).c_str() : "inf");
        if (!a.json_schema.empty())
            std::printf("structured output   response_format json_schema %s\n",
                        a.json_schema.c_str());
        std::printf("requests            %lld completed, %lld failed, in %.2f s\n", (long long)ok,
                    (long long)(a.requests - ok), duration);
        std::printf("tokens              %lld in, %lld out\n", (long long)in_tokens,
                    (long long)out_tokens);
        std::printf("throughput          %.2f requests/s, %.1f output tokens/s\n",
                    static_cast<double>(ok) / duration, static_cast<double>(out_tokens) / duration);
        std::printf("%-18s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99");
        for (const auto& [name, v] : std::vector<std::pair<const char*, std::vector<double>*>>{
                 {"TTFT", &ttft}, {"TPOT", &tpot}, {"ITL", &itl}, {"latency", &e2e}})
            std::printf("%-18s %10s %10s %10s %10s\n", name, ms(mean(*v)).c_str(),
                        ms(percentile(*v, 50)).c_str(), ms(percentile(*v, 90)).c_str(),
                        ms(percentile(*v, 99)).c_str());
        for (const auto& [e, n] : errors) std::printf("error x%d: %s\n", n, e.c_str());
    }
    return ok == 0 ? 1 : 0;
}

}  // namespace

Run add_bench(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    app.add_option("url", a->url, "the server, e.g. http://127.0.0.1:8000")->required();
    app.add_option("--model", a->model, "model name to send (default: the first of /v1/models)");
    app.add_option("--concurrency", a->concurrency, "requests in flight at most (default 8)");
    app.add_option("--requests", a->requests, "requests in all (default 64)");
    app.add_option("--input-len", a->input_len, "words per random prompt (default 128)");
    app.add_option("--output-len", a->output_len, "tokens per answer (default 128)");
    app.add_option("--request-rate", a->request_rate,
                   "Poisson arrivals per second (default: all at once)");
    app.add_option("--dataset", a->dataset,
                   "JSONL of {\"prompt\": ...} or {\"messages\": [...]} (with --endpoint chat)");
    app.add_option("--endpoint", a->endpoint, "completions (default) or chat");
    app.add_option("--api-key", a->api_key, "bearer token (default: $OPENAI_API_KEY)");
    app.add_option("--seed", a->seed, "seed of the prompts and arrivals (default 0)");
    app.add_option("--timeout", a->timeout, "seconds a request may take (default 600)");
    app.add_flag("--json", a->json, "print the results as JSON (with per-request timings)");
    app.add_option("--json-schema", a->json_schema,
                   "a JSON Schema file: every request asks for response_format json_schema "
                   "(structured output; a constrained answer may end before --output-len)");
    return [a] { return run_bench(*a); };
}

}  // namespace myriad::cli
