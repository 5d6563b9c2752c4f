#include "cli/bench_dataset.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>

#include "engine/engine.h"
#include "format/json_file.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<TokenId> read_ids(const nlohmann::ordered_json& j, const std::string& where,
                              int64_t vocab) {
    if (!j.is_array() || j.empty()) bad_input("{}: expected a non-empty array of token ids", where);
    std::vector<TokenId> ids;
    for (const auto& v : j) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab)
            bad_input("{}: {} is not a token id below the model's vocab_size {}", where, v.dump(),
                      vocab);
        ids.push_back(static_cast<TokenId>(v.get<int64_t>()));
    }
    return ids;
}

// One request's timeline: when its first and last tokens came, how many, over how many steps.
struct Timeline {
    Clock::time_point first, last;
    int64_t tokens = 0, steps = 0;
    std::vector<TokenId> out;
    std::vector<SampleResult> logprobs;  // with top_logprobs
};

struct RunFigures {
    double wall_s = 0;
    double tok_s_per_seq = 0;    // mean over requests of (tokens - 1) / (last - first)
    double tokens_per_step = 0;  // mean over requests of (tokens - 1) / (steps - 1)
    double throughput = 0;       // every request's tokens over the wall time
    EngineStats stats;
    std::vector<std::vector<TokenId>> outputs;
    std::vector<std::vector<SampleResult>> logprobs;  // with top_logprobs
};

// A greedy decision closer than this (top-2 logit margin of the run without drafts) may flip
// between the GPU's kernels for one row and for k + 1 rows; the GPU's exactness bound.
constexpr double kNearTie = 1e-3;

// With top_logprobs >= 0 every token's logprob and top alternatives come back too (the rows
// are then sampled on the host: such a run is for the margins, not for timing).
RunFigures run_once(WorkerGroup& workers, const std::vector<CodeEditRecord>& records,
                    int64_t concurrency, bool speculate, const DatasetBenchOptions& o,
                    int64_t top_logprobs = -1) {
    EngineConfig ec;
    ec.check_invariants = false;
    ec.scheduler.max_num_seqs = concurrency;
    if (speculate) {
        ec.speculative.method = SpeculativeMethod::Ngram;
        ec.speculative.num_speculative_tokens = o.spec_len;
        ec.draft_forced = o.force;  // the answers are forced: their drafts verified as generated
    }
    Engine engine(workers, ec);
    std::vector<Timeline> lines(records.size());
    std::vector<std::shared_ptr<RequestHandle>> handles(records.size());
    std::deque<size_t> active;
    size_t next = 0;
    auto submit = [&] {
        const CodeEditRecord& r = records[next];
        SamplingParams p;
        p.temperature = 0;
        p.ignore_eos = true;
        p.max_tokens = static_cast<int64_t>(r.answer.size());
        p.top_logprobs = top_logprobs;
        if (o.force) p.forced_tokens = r.answer;
        handles[next] = engine.submit(r.prompt, p);
        active.push_back(next++);
    };
    const auto t0 = Clock::now();
    while (next < records.size() && static_cast<int64_t>(active.size()) < concurrency) submit();
    while (!active.empty()) {
        const bool ran = engine.step();
        const auto now = Clock::now();
        for (size_t k = 0; k < active.size();) {
            const size_t i = active[k];
            Timeline& t = lines[i];
            RequestOutput out;
            bool finished = false, got = false;
            while (handles[i]->try_next(out)) {
                if (!out.error.empty())
                    internal_error("bench-model --dataset: request {} failed: {}", records[i].id,
                                   out.error);
                if (!out.tokens.empty()) {
                    if (t.tokens == 0) t.first = now;
                    t.last = now;
                    t.tokens += static_cast<int64_t>(out.tokens.size());
                    t.out.insert(t.out.end(), out.tokens.begin(), out.tokens.end());
                    t.logprobs.insert(t.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
                    got = true;
                }
                finished = finished || out.finished;
            }
            if (got) ++t.steps;
            if (finished) {
                active.erase(active.begin() + static_cast<std::ptrdiff_t>(k));
                if (next < records.size()) submit();
            } else {
                ++k;
            }
        }
        if (!ran && !active.empty())
            internal_error("bench-model --dataset: the engine stopped with {} requests running",
                           active.size());
    }
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    int64_t total = 0, timed = 0;
    for (const Timeline& t : lines) {
        total += t.tokens;
        f.outputs.push_back(t.out);
        f.logprobs.push_back(t.logprobs);
        const double span = std::chrono::duration<double>(t.last - t.first).count();
        if (t.tokens < 2 || t.steps < 2 || span <= 0) continue;
        f.tok_s_per_seq += double(t.tokens - 1) / span;
        f.tokens_per_step += double(t.tokens - 1) / double(t.steps - 1);
        ++timed;
    }
    if (timed > 0) {
        f.tok_s_per_seq /= double(timed);
        f.tokens_per_step /= double(timed);
    }
    f.throughput = double(total) / f.wall_s;
    f.stats = engine.stats();
    return f;
}

// Where greedy outputs with drafts differ from those without (a GPU run): the plain run's top-2
// margin at each request's first differing position, from a plain run again with logprobs (its
// tokens must be the plain run's up to there, or the margin says nothing).
struct Divergences {
    int64_t near_ties = 0;
    double largest_margin = 0;  // of the divergences that are not near-ties
};

Divergences divergences(WorkerGroup& workers, const std::vector<CodeEditRecord>& records,
                        int64_t concurrency, const DatasetBenchOptions& o, const RunFigures& plain,
                        const RunFigures& spec) {
    Divergences d;
    RunFigures probed;
    for (size_t i = 0; i < records.size(); ++i) {
        const std::vector<TokenId>&a = plain.outputs[i], &b = spec.outputs[i];
        if (a == b) continue;
        if (probed.outputs.empty()) probed = run_once(workers, records, concurrency, false, o, 2);
        size_t at = 0;
        while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
        const std::vector<TokenId>& again = probed.outputs[i];
        const std::vector<SampleResult>& lp = probed.logprobs[i];
        double margin = 0;
        if (at < lp.size() && lp[at].top.size() >= 2 && again.size() > at &&
            std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(at), again.begin()))
            margin = double(lp[at].top[0].logprob) - double(lp[at].top[1].logprob);
        else
            margin = -1;  // the logprob run itself went another way before: a near-tie too
        if (margin < kNearTie)
            ++d.near_ties;
        else
            d.largest_margin = std::max(d.largest_margin, margin);
    }
    return d;
}

}  // namespace

std::vector<CodeEditRecord> load_code_edit_dataset(const std::string& file,
                                                   const std::string& tokens, int64_t vocab) {
    std::ifstream in(file);
    if (!in) bad_input("--dataset {}: cannot read the file", file);
    std::vector<CodeEditRecord> records;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = fmt::format("--dataset {} line {}", file, n);
        const auto j = parse_json(line, where);
        if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_object())
            bad_input(
                "{}: no \"tokens\" object (make the file with "
                "tools/make_code_edit_dataset.py)",
                where);
        const auto& all = j["tokens"];
        if (!all.contains(tokens)) {
            std::string names;
            for (auto it = all.begin(); it != all.end(); ++it)
                names += (names.empty() ? "" : ", ") + it.key();
            bad_input(
                "{}: no token ids of tokenizer \"{}\" (it has {}); choose one with "
                "--dataset-tokens",
                where, tokens, names);
        }
        CodeEditRecord r;
        r.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>()
                                                       : fmt::format("line {}", n);
        const auto& t = all[tokens];
        if (!t.is_object() || !t.contains("prompt") || !t.contains("answer"))
            bad_input("{}: tokens.{} needs \"prompt\" and \"answer\"", where, tokens);
        r.prompt = read_ids(t["prompt"], fmt::format("{}: tokens.{}.prompt", where, tokens), vocab);
        r.answer = read_ids(t["answer"], fmt::format("{}: tokens.{}.answer", where, tokens), vocab);
        records.push_back(std::move(r));
    }
    if (records.empty()) bad_input("--dataset {}: no records", file);
    return records;
}

nlohmann::ordered_json run_dataset_bench(WorkerGroup& workers,
                                         const std::vector<CodeEditRecord>& records,
                                         const DatasetBenchOptions& o) {
    const bool gpu = workers.options().device == Device::Cuda;
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    if (!o.json)
        std::printf(
            "code-editing dataset: %zu requests, answers %s; ngram drafts of up to %lld tokens\n"
            "%-11s %-6s %14s %12s %14s %10s %10s %8s\n",
            records.size(), o.force ? "forced" : "generated greedily", (long long)o.spec_len,
            "concurrency", "spec", "tok/s per seq", "tok/s all", "tokens a step", "accepted",
            "drafted", "speedup");
    for (int64_t c : o.concurrencies) {
        const RunFigures plain = run_once(workers, records, c, false, o);
        const RunFigures spec = run_once(workers, records, c, true, o);
        int64_t differ = 0;
        Divergences div;
        for (size_t i = 0; i < records.size(); ++i) {
            if (o.force &&
                (plain.outputs[i] != records[i].answer || spec.outputs[i] != records[i].answer))
                internal_error(
                    "bench-model --dataset: request {} did not reproduce its forced answer (a "
                    "bug in forced tokens or draft verification); no figures are reported",
                    records[i].id);
            if (spec.outputs[i] != plain.outputs[i]) ++differ;
        }
        if (differ > 0 && !gpu)
            internal_error(
                "bench-model --dataset: {} of {} greedy outputs with ngram drafts differ from "
                "those without on the CPU (speculation must not change greedy output)",
                differ, records.size());
        if (differ > 0 && !o.force) div = divergences(workers, records, c, o, plain, spec);
        const double accept =
            spec.stats.spec_draft_tokens > 0
                ? double(spec.stats.spec_accepted_tokens) / double(spec.stats.spec_draft_tokens)
                : 0.0;
        const double speedup =
            plain.tok_s_per_seq > 0 ? spec.tok_s_per_seq / plain.tok_s_per_seq : 0.0;
        auto figures = [](const RunFigures& f) {
            return nlohmann::ordered_json{{"tok_s_per_seq", f.tok_s_per_seq},
                                          {"tok_s", f.throughput},
                                          {"tokens_per_step", f.tokens_per_step},
                                          {"wall_s", f.wall_s},
                                          {"steps", f.stats.steps}};
        };
        nlohmann::ordered_json sj = figures(spec);
        sj["drafts"] = spec.stats.spec_drafts;
        sj["draft_tokens"] = spec.stats.spec_draft_tokens;
        sj["accepted_tokens"] = spec.stats.spec_accepted_tokens;
        sj["acceptance_rate"] = accept;
        sj["accepted_per_draft"] =
            spec.stats.spec_drafts > 0
                ? double(spec.stats.spec_accepted_tokens) / double(spec.stats.spec_drafts)
                : 0.0;
        results.push_back({{"concurrency", c},
                           {"requests", records.size()},
                           {"none", figures(plain)},
                           {"ngram", sj},
                           {"speedup_per_seq", speedup},
                           {"outputs_differing", differ},
                           {"differing_at_near_tie", div.near_ties},
                           {"largest_divergence_margin", div.largest_margin}});
        if (!o.json) {
            std::printf("%-11lld %-6s %14.1f %12.1f %14.2f %10s %10s %8s\n", (long long)c, "none",
                        plain.tok_s_per_seq, plain.throughput, plain.tokens_per_step, "-", "-", "");
            std::printf("%-11lld %-6s %14.1f %12.1f %14.2f %10lld %10lld %7.2fx\n", (long long)c,
                        "ngram", spec.tok_s_per_seq, spec.throughput, spec.tokens_per_step,
                        (long long)spec.stats.spec_accepted_tokens,
                        (long long)spec.stats.spec_draft_tokens, speedup);
            if (differ > 0)
                std::printf(
                    "            %lld of %zu greedy outputs differ with drafts: %lld where the "
                    "run without had a top-2 margin below %g (a near-tie between the GPU's "
                    "kernels)%s\n",
                    (long long)differ, records.size(), (long long)div.near_ties, kNearTie,
                    div.near_ties < differ
                        ? fmt::format(", the rest at margins up to {:.3g}", div.largest_margin)
                              .c_str()
                        : "");
        }
    }
    return results;
}

}  // namespace myriad::cli
