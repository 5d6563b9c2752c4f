// GPU against CPU over many random DeepSeek-V3-family configurations (issue 19): every step's
// logits and every routing decision of every MoE layer, in each weight format the CUDA backend
// runs. The router's inputs and decisions come from a test hook (model/route_observer.h); a host
// reference in double precision recomputes each decision from each backend's own router logits.
//
// Exact mode (MYRIAD_KERNELS=exact=1: F32 activations in every linear):
//   - the GPU's router must choose exactly what the reference chooses from the GPU's own logits
//     (its logic and tie-breaking are the CPU's: larger biased score first, the lower index
//     among equals), except where those logits leave a gap under kTieGap;
//   - where the GPU's experts differ from the CPU's, the CPU's own margin for the decision that
//     differs (the topk_group-th against the next group score, or the k-th against the next
//     biased expert score) must be below kFlipMargin and at most twice the two backends' largest
//     score difference at that token: a near-tie, not a bug. Such a flip moves that token's later
//     layers, and through attention every later position, so those are not compared further;
//   - every other position's router input and logits must agree to kExactTol norm-wise.
// Default mode (BF16-rounded activations where the backend chooses them): the same router
// checks, flips explained by the two backends' score difference at that token, router inputs
// and logits within kDefaultTol before a flip, the same greedy token there wherever the CPU's
// top-2 logit margin exceeds kClearMargin of the row's largest |logit| (the logits move by
// about 1e-2 of their size in this mode, so an absolute margin of 1e-2 is no clear call). The share
// of all positions whose greedy token differs (at close calls, and after flips, which move every
// later position) is printed per config and, over all configs together, must stay at most 5 % (2 %
// in exact mode), so a regression in a BF16 path shows as a number that moved. (Per config it is
// not bounded: the tiny random models have few close calls each, so one flip is already several
// percent.)
//
// MYRIAD_DIFF_DIRS=dir1:dir2 runs the same comparison, exact mode, on checkpoint folders instead
// (each with prompts.json: {"prompts": [[ids...], ...], "decode": N}), printing for each prompt
// the first position where the greedy tokens differ and the routing decisions around it.
#include <gtest/gtest.h>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/sequence_logits.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "gpu_test_util.h"
#include "model/model_config.h"
#include "ops/backend.h"
#include "route_decision.h"

namespace myriad::testing {
namespace {

constexpr double kExactTol = 1e-4;      // ‖gpu − cpu‖ / ‖cpu‖ of router inputs and logits
constexpr double kDefaultTol = 5e-2;    // the same in default mode (BF16-rounded activations)
constexpr double kTieGap = 1e-6;        // a gap this small may go either way on any hardware
constexpr double kFlipMargin = 1e-4;    // exact mode: a flip needs a CPU margin below this
constexpr double kClearMargin = 1e-2;   // default mode: top-2 logit margin of a clear position,
                                        // relative to the row's largest |logit|
constexpr double kDefaultShare = 0.05;  // default mode: disagreeing share of the other positions

using json = nlohmann::ordered_json;

std::vector<int> sorted_ids(const int32_t* p, int64_t k) {
    std::vector<int> v(p, p + k);
    std::sort(v.begin(), v.end());
    return v;
}

double row_rel(const float* a, const float* b, int64_t n) {
    double diff = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) {
        diff += double(a[i] - b[i]) * (a[i] - b[i]);
        ref += double(b[i]) * b[i];
    }
    return std::isfinite(diff) ? std::sqrt(diff / std::max(ref, 1e-30)) : INFINITY;
}

struct Top2 {
    int64_t best = 0;
    double margin = 0;
};

Top2 top2(const float* row, int64_t n) {
    Top2 t;
    t.best = std::max_element(row, row + n) - row;
    float second = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
        if (i != t.best) second = std::max(second, row[i]);
    t.margin = double(row[t.best]) - second;
    return t;
}

// What one comparison found.
struct Report {
    std::vector<std::string> failures;  // each a sentence naming layer, position and numbers
    std::vector<std::string> flips;     // explained flips, for the log
    double worst_x = 0, worst_logits = 0, worst_score_delta = 0;
    int compared_positions = 0, excluded_positions = 0, decisions = 0;
    int clear = 0, clear_agree = 0, unclear = 0, unclear_disagree = 0;
    int64_t first_token_difference = -1;  // position of the first greedy difference
    std::vector<int32_t> cpu_greedy;      // the CPU's greedy token after each step
};

// The records of one step on both backends, position p0.. of the sequence; updates `flip_at` (the
// first position whose routing differed) and the report.
void compare_routes(const std::vector<RouteRecord>& cpu, const std::vector<RouteRecord>& gpu,
                    int64_t p0, bool exact, int64_t& flip_at, Report& rep) {
    if (cpu.size() != gpu.size()) {
        rep.failures.push_back("the backends routed a different number of MoE layers");
        return;
    }
    for (size_t i = 0; i < cpu.size(); ++i) {
        const RouteRecord& c = cpu[i];
        const RouteRecord& g = gpu[i];
        if (c.tokens != g.tokens || c.experts != g.experts || c.top_k != g.top_k) {
            rep.failures.push_back("router records of different shapes");
            return;
        }
        int64_t new_flip = flip_at;
        for (int64_t t = 0; t < c.tokens; ++t) {
            const int64_t pos = p0 + t;
            if (pos >= flip_at) continue;
            const int64_t k = c.top_k, E = c.experts, H = c.hidden;
            ++rep.decisions;
            const double xr = row_rel(&g.x[t * H], &c.x[t * H], H);
            rep.worst_x = std::max(rep.worst_x, xr);
            const double tol = exact ? kExactTol : kDefaultTol;
            if (xr > tol)
                rep.failures.push_back(fmt::format(
                    "layer {} position {}: router input ‖gpu−cpu‖/‖cpu‖ {:.3e} > {:.0e}", c.layer,
                    pos, xr, tol));
            const Decision dc = route_reference(c, &c.logits[t * E]);
            const Decision dg = route_reference(g, &g.logits[t * E]);
            const std::vector<int> cpu_ids(&c.ids[t * k], &c.ids[t * k] + k);
            const std::vector<int> gpu_ids(&g.ids[t * k], &g.ids[t * k] + k);
            const double gap_c = std::min(dc.group_gap, dc.expert_gap);
            const double gap_g = std::min(dg.group_gap, dg.expert_gap);
            if (cpu_ids != dc.ids && gap_c >= kTieGap)
                rep.failures.push_back(fmt::format(
                    "layer {} position {}: the CPU chose [{}], the reference [{}] (gap {:.2e})",
                    c.layer, pos, fmt::join(cpu_ids, ","), fmt::join(dc.ids, ","), gap_c));
            if (gpu_ids != dg.ids && gap_g >= kTieGap)
                rep.failures.push_back(fmt::format(
                    "layer {} position {}: the GPU router chose [{}] where its own logits give "
                    "[{}] (gap {:.2e}): the kernel decides differently from the CPU's rule",
                    c.layer, pos, fmt::join(gpu_ids, ","), fmt::join(dg.ids, ","), gap_g));
            double delta = 0;
            for (int64_t e = 0; e < E; ++e)
                delta = std::max(delta, std::abs(dc.choice[e] - dg.choice[e]));
            rep.worst_score_delta = std::max(rep.worst_score_delta, delta);
            if (sorted_ids(&c.ids[t * k], k) == sorted_ids(&g.ids[t * k], k)) {
                // Same experts: the same weights, expert by expert.
                for (int64_t j = 0; j < k; ++j)
                    for (int64_t m = 0; m < k; ++m)
                        if (g.ids[t * k + m] == c.ids[t * k + j] &&
                            std::abs(g.weights[t * k + m] - c.weights[t * k + j]) >
                                tol * std::max(1.0f, std::abs(c.weights[t * k + j])))
                            rep.failures.push_back(fmt::format(
                                "layer {} position {}: expert {} weight gpu {} cpu {}", c.layer,
                                pos, c.ids[t * k + j], g.weights[t * k + m], c.weights[t * k + j]));
                continue;
            }
            const bool groups_differ = dc.group_kept != dg.group_kept;
            const double margin = groups_differ ? dc.group_gap : dc.expert_gap;
            const std::string what = fmt::format(
                "layer {} position {}: experts cpu [{}] gpu [{}], {} margin on the CPU {:.3e}, "
                "largest score difference {:.3e}",
                c.layer, pos, fmt::join(cpu_ids, ","), fmt::join(gpu_ids, ","),
                groups_differ ? "group" : "expert", margin, delta);
            // Exact mode: a near-tie in absolute terms too; default mode: within what the
            // BF16-rounded activations moved the scores.
            if ((exact && margin > kFlipMargin) || margin > 2 * delta + kTieGap)
                rep.failures.push_back(what + ": not a near-tie");
            else
                rep.flips.push_back(what);
            new_flip = std::min(new_flip, pos);
        }
        flip_at = new_flip;
    }
}

void compare_logits(const std::vector<float>& cpu, const std::vector<float>& gpu, int64_t vocab,
                    int64_t p0, bool exact, int64_t flip_at, Report& rep) {
    for (int64_t r = 0; r < static_cast<int64_t>(cpu.size()) / vocab; ++r) {
        const int64_t pos = p0 + r;
        const float* c = &cpu[r * vocab];
        const float* g = &gpu[r * vocab];
        const Top2 tc = top2(c, vocab), tg = top2(g, vocab);
        if (tc.best != tg.best && rep.first_token_difference < 0) rep.first_token_difference = pos;
        const double scale =
            std::max(std::abs(c[tc.best]), std::abs(*std::min_element(c, c + vocab)));
        const bool clear = tc.margin > kClearMargin * scale;
        if (clear) {
            ++rep.clear;
            rep.clear_agree += tc.best == tg.best;
        } else {
            ++rep.unclear;
            rep.unclear_disagree += tc.best != tg.best;
        }
        if (pos >= flip_at) {
            ++rep.excluded_positions;
            continue;
        }
        ++rep.compared_positions;
        const double rel = row_rel(g, c, vocab);
        rep.worst_logits = std::max(rep.worst_logits, rel);
        const double tol = exact ? kExactTol : kDefaultTol;
        if (rel > tol)
            rep.failures.push_back(
                fmt::format("position {}: logits ‖gpu−cpu‖/‖cpu‖ {:.3e} > {:.0e}", pos, rel, tol));
        if (tc.best != tg.best && (exact ? tc.margin > kTieGap : clear))
            rep.failures.push_back(fmt::format(
                "position {}: greedy token cpu {} gpu {} with no routing flip before it (CPU "
                "top-2 margin {:.3e})",
                pos, tc.best, tg.best, tc.margin));
    }
}

struct Backends {
    std::vector<RouteRecord> cpu_routes, gpu_routes;
    std::unique_ptr<WorkerGroup> cpu, gpu;
};

std::unique_ptr<Backends> make_backends(const ModelConfig& c, const Checkpoint& ckpt,
                                        int64_t kv_blocks) {
    auto b = std::make_unique<Backends>();
    WorkerGroupOptions wo;
    wo.tp = 1;
    wo.threads = 2;
    wo.kv_blocks = kv_blocks;
    wo.kv_cache_dtype = KvCacheDtype::Fp32;
    wo.sampling = BackendSampling::Off;
    Backends* raw = b.get();
    wo.device = Device::Cpu;
    wo.model.route_observer = [raw](const RouteRecord& r) { raw->cpu_routes.push_back(r); };
    b->cpu = std::make_unique<WorkerGroup>(c, ckpt, wo);
    wo.device = Device::Cuda;
    wo.model.route_observer = [raw](const RouteRecord& r) { raw->gpu_routes.push_back(r); };
    b->gpu = std::make_unique<WorkerGroup>(c, ckpt, wo);
    return b;
}

// The prompt in one step, then `decode` greedy steps (the CPU's tokens fed to both backends).
Report run_sequence(Backends& b, const std::vector<int32_t>& prompt, int64_t decode, bool exact,
                    int64_t vocab) {
    Report rep;
    int64_t flip_at = INT64_MAX;
    int64_t past = 0;
    std::vector<int32_t> feed = prompt;
    for (int64_t s = 0; s <= decode; ++s) {
        b.cpu_routes.clear();
        b.gpu_routes.clear();
        const std::vector<float> lc = sequence_logits(*b.cpu, feed, past, 0);
        const std::vector<float> lg = sequence_logits(*b.gpu, feed, past, 0);
        compare_routes(b.cpu_routes, b.gpu_routes, past, exact, flip_at, rep);
        compare_logits(lc, lg, vocab, past, exact, flip_at, rep);
        past += static_cast<int64_t>(feed.size());
        const int64_t last = static_cast<int64_t>(feed.size()) - 1;
        feed = {static_cast<int32_t>(top2(&lc[last * vocab], vocab).best)};
        rep.cpu_greedy.push_back(feed[0]);
    }
    return rep;
}

struct RandomCase {
    std::string name;
    json config;
    std::string format;  // bf16, fp8, nvfp4, nvfp4-all, int4
};

// Any value of `v`.
template <class T>
T pick(std::mt19937_64& rng, std::initializer_list<T> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

json base_config() {
    return {{"architectures", {"DeepseekV3ForCausalLM"}},
            {"model_type", "deepseek_v3"},
            {"vocab_size", 256},
            {"hidden_size", 64},
            {"intermediate_size", 128},
            {"moe_intermediate_size", 32},
            {"num_hidden_layers", 3},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 4},
            {"q_lora_rank", 64},
            {"kv_lora_rank", 32},
            {"qk_nope_head_dim", 16},
            {"qk_rope_head_dim", 16},
            {"v_head_dim", 16},
            {"n_routed_experts", 8},
            {"num_experts_per_tok", 2},
            {"n_shared_experts", 1},
            {"first_k_dense_replace", 1},
            {"moe_layer_freq", 1},
            {"n_group", 1},
            {"topk_group", 1},
            {"scoring_func", "sigmoid"},
            {"topk_method", "noaux_tc"},
            {"norm_topk_prob", true},
            {"routed_scaling_factor", 2.5},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 10000.0},
            {"rope_scaling", nullptr},
            {"max_position_embeddings", 4096},
            {"tie_word_embeddings", false},
            {"bos_token_id", 0},
            {"eos_token_id", 1}};
}

json yarn(double factor, int64_t orig, double mscale, double mscale_all) {
    return {{"type", "yarn"},
            {"factor", factor},
            {"original_max_position_embeddings", orig},
            {"beta_fast", 32.0},
            {"beta_slow", 1.0},
            {"mscale", mscale},
            {"mscale_all_dim", mscale_all}};
}

// The issue's configuration: hidden 128, 4 layers (2 dense), 16 experts in 4 groups (2 kept),
// top 4, q_lora 96, kv_lora 64, nope/rope/v 32/16/32, vocab 512, YaRN factor 40 over 64.
json issue_config() {
    json j = base_config();
    j["vocab_size"] = 512;
    j["hidden_size"] = 128;
    j["intermediate_size"] = 256;
    j["moe_intermediate_size"] = 64;
    j["num_hidden_layers"] = 4;
    j["first_k_dense_replace"] = 2;
    j["n_routed_experts"] = 16;
    j["num_experts_per_tok"] = 4;
    j["n_group"] = 4;
    j["topk_group"] = 2;
    j["q_lora_rank"] = 96;
    j["kv_lora_rank"] = 64;
    j["qk_nope_head_dim"] = 32;
    j["v_head_dim"] = 32;
    j["rope_scaling"] = yarn(40, 64, 1.0, 1.0);
    j["max_position_embeddings"] = 2560;
    return j;
}

std::vector<RandomCase> random_cases(int count, uint64_t seed) {
    std::vector<RandomCase> out;
    // Fixed shapes first: the issue's, DeepSeek-V3's routing (256 experts, 8 groups keep 4, top
    // 8) and Kimi's (384 experts, one group, top 8).
    {
        out.push_back({"issue19", issue_config(), "bf16"});
        json v3 = base_config();
        v3["n_routed_experts"] = 256;
        v3["num_experts_per_tok"] = 8;
        v3["n_group"] = 8;
        v3["topk_group"] = 4;
        v3["rope_scaling"] = yarn(40, 64, 1.0, 1.0);
        v3["max_position_embeddings"] = 2560;
        out.push_back({"v3_routing", v3, "fp8"});
        json kimi = base_config();
        kimi["n_routed_experts"] = 384;
        kimi["num_experts_per_tok"] = 8;
        kimi["num_attention_heads"] = kimi["num_key_value_heads"] = 64;
        kimi["q_lora_rank"] = 96;
        kimi["routed_scaling_factor"] = 2.827;
        out.push_back({"kimi_routing", kimi, "int4"});
    }
    std::mt19937_64 rng(seed);
    const char* formats[] = {"bf16", "fp8", "nvfp4", "nvfp4-all", "int4"};
    for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
        json j = base_config();
        const std::string format = formats[i % 5];
        j["hidden_size"] = pick<int64_t>(rng, {64, 128});
        j["num_hidden_layers"] = uniform(rng, 2, 3);
        j["first_k_dense_replace"] = uniform(rng, 0, 1);
        const int64_t heads = pick<int64_t>(rng, {1, 2, 4, 8, 16, 32, 64, 128});
        j["num_attention_heads"] = j["num_key_value_heads"] = heads;
        j["q_lora_rank"] = uniform(rng, 0, 1) ? json(pick<int64_t>(rng, {32, 64, 96})) : json();
        j["kv_lora_rank"] = pick<int64_t>(rng, {32, 64});
        j["qk_nope_head_dim"] = pick<int64_t>(rng, {16, 32});
        j["qk_rope_head_dim"] = pick<int64_t>(rng, {16, 32});
        j["v_head_dim"] =
            format == "int4" || format == "nvfp4-all" ? 32 : pick<int64_t>(rng, {16, 32});
        j["moe_intermediate_size"] = pick<int64_t>(rng, {32, 64});
        const int64_t experts = pick<int64_t>(rng, {2, 4, 8, 16, 24, 64, 160, 256, 384});
        std::vector<int64_t> groups;
        for (int64_t g : {1, 2, 4, 8})
            if (experts % g == 0 && experts / g >= 2) groups.push_back(g);
        const int64_t n_group = groups[uniform(rng, 0, static_cast<int64_t>(groups.size()) - 1)];
        const int64_t topk_group = uniform(rng, 1, n_group);
        const int64_t top_k =
            uniform(rng, 1, std::min<int64_t>(8, topk_group * (experts / n_group)));
        j["n_routed_experts"] = experts;
        j["n_group"] = n_group;
        j["topk_group"] = topk_group;
        j["num_experts_per_tok"] = top_k;
        j["n_shared_experts"] = uniform(rng, 0, 2);
        j["norm_topk_prob"] = uniform(rng, 0, 1) == 1;
        j["routed_scaling_factor"] = pick<double>(rng, {1.0, 2.5, 2.827});
        j["rms_norm_eps"] = pick<double>(rng, {1e-6, 1e-5});
        if (uniform(rng, 0, 1)) {
            const double factor = pick<double>(rng, {4.0, 40.0});
            const int64_t orig = pick<int64_t>(rng, {32, 64, 4096});
            j["rope_scaling"] = yarn(factor, orig, 1.0, pick<double>(rng, {1.0, 0.707}));
            j["max_position_embeddings"] = static_cast<int64_t>(factor * orig);
        } else {
            j["rope_theta"] = pick<double>(rng, {10000.0, 50000.0});
        }
        out.push_back({fmt::format("random{}", i), j, format});
    }
    return out;
}

// The config of `rc` with its weight format (synthetic weights: Checkpoint::synthetic).
ModelConfig case_config(const RandomCase& rc) {
    ModelConfig c = parse_model_config(rc.config, "<" + rc.name + ">");
    if (rc.format == "fp8") {
        c.quant.method = QuantMethod::Fp8Block;
        c.quant.block_rows = c.quant.block_cols = 128;
    } else if (rc.format == "nvfp4" || rc.format == "nvfp4-all") {
        c.quant.method = QuantMethod::ModelOptNvfp4;
        c.quant.group_size = 16;
        c.quant.ignore = {"lm_head", "*mlp.gate"};
        if (rc.format == "nvfp4") {
            c.quant.ignore.insert(c.quant.ignore.end(), {"*.self_attn*", "*.shared_experts*"});
            for (int64_t l = 0; l < c.first_k_dense_replace; ++l)
                c.quant.ignore.push_back("*.layers." + std::to_string(l) + ".mlp*");
        }
    } else if (rc.format == "int4") {  // Kimi-K2-Thinking's scope: routed experts only
        c.quant.method = QuantMethod::CompressedInt4;
        c.quant.group_size = 32;
        c.quant.targets = {"Linear"};
        c.quant.ignore = {"lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                          "re:.*mlp\\.(gate|up|down)_proj$", "re:.*mlp\\.gate$"};
    }
    c.quant.source = "<" + rc.name + " " + rc.format + ">";
    return c;
}

std::string describe(const json& j, const std::string& format) {
    return fmt::format(
        "{} hidden {} layers {} (dense {}) heads {} q_lora {} kv_lora {} nope/rope/v {}/{}/{} "
        "experts {} groups {}/{} top {} shared {} yarn {}",
        format, j["hidden_size"].get<int64_t>(), j["num_hidden_layers"].get<int64_t>(),
        j["first_k_dense_replace"].get<int64_t>(), j["num_attention_heads"].get<int64_t>(),
        j["q_lora_rank"].is_null() ? std::string("-") : j["q_lora_rank"].dump(),
        j["kv_lora_rank"].get<int64_t>(), j["qk_nope_head_dim"].get<int64_t>(),
        j["qk_rope_head_dim"].get<int64_t>(), j["v_head_dim"].get<int64_t>(),
        j["n_routed_experts"].get<int64_t>(), j["n_group"].get<int64_t>(),
        j["topk_group"].get<int64_t>(), j["num_experts_per_tok"].get<int64_t>(),
        j["n_shared_experts"].get<int64_t>(), j["rope_scaling"].is_null() ? "off" : "on");
}

void print_report(const std::string& name, bool exact, const Report& r) {
    std::printf(
        "%-14s %-7s decisions %5d, positions %3d compared / %3d after a flip; worst rel: router "
        "input %.2e, logits %.2e; largest score difference %.2e; flips %zu; clear %d/%d agree; "
        "unclear disagree %d/%d\n",
        name.c_str(), exact ? "exact" : "default", r.decisions, r.compared_positions,
        r.excluded_positions, r.worst_x, r.worst_logits, r.worst_score_delta, r.flips.size(),
        r.clear_agree, r.clear, r.unclear_disagree, r.unclear);
    for (const std::string& f : r.flips) std::printf("    flip: %s\n", f.c_str());
    for (size_t i = 0; i < std::min<size_t>(r.failures.size(), 12); ++i)
        std::printf("    FAIL: %s\n", r.failures[i].c_str());
}

void merge(Report& into, const Report& r) {
    into.failures.insert(into.failures.end(), r.failures.begin(), r.failures.end());
    into.flips.insert(into.flips.end(), r.flips.begin(), r.flips.end());
    into.worst_x = std::max(into.worst_x, r.worst_x);
    into.worst_logits = std::max(into.worst_logits, r.worst_logits);
    into.worst_score_delta = std::max(into.worst_score_delta, r.worst_score_delta);
    into.compared_positions += r.compared_positions;
    into.excluded_positions += r.excluded_positions;
    into.decisions += r.decisions;
    into.clear += r.clear;
    into.clear_agree += r.clear_agree;
    into.unclear += r.unclear;
    into.unclear_disagree += r.unclear_disagree;
}

int case_count() {
    const char* v = std::getenv("MYRIAD_DIFF_CASES");
    return v ? std::max(3, std::atoi(v)) : 24;
}

void run_cases(bool exact) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    // (graphs off: the observer copies inside the step)
    KernelOverrides mode(exact ? "exact=1,graphs=0" : "exact=0,graphs=0");
    int failed_cases = 0, pooled_positions = 0, pooled_disagree = 0;
    for (const RandomCase& rc : random_cases(case_count(), 20261202)) {
        SCOPED_TRACE(rc.name);
        const ModelConfig c = case_config(rc);
        const Checkpoint ckpt =
            Checkpoint::synthetic(0x19D1FFull + std::hash<std::string>{}(rc.name));
        std::printf("%s: %s\n", rc.name.c_str(), describe(rc.config, rc.format).c_str());
        std::unique_ptr<Backends> b;
        try {
            b = make_backends(c, ckpt, 16);
        } catch (const std::exception& e) {
            ADD_FAILURE() << rc.name << " (" << describe(rc.config, rc.format)
                          << ") did not load: " << e.what();
            ++failed_cases;
            continue;
        }
        std::mt19937_64 rng(std::hash<std::string>{}(rc.name) ^ 0xABCDu);
        Report all;
        for (int p = 0; p < 2; ++p) {
            std::vector<int32_t> prompt(static_cast<size_t>(uniform(rng, 9, 40)));
            for (int32_t& t : prompt) t = static_cast<int32_t>(uniform(rng, 0, c.vocab_size - 1));
            merge(all, run_sequence(*b, prompt, 6, exact, c.vocab_size));
        }
        print_report(rc.name, exact, all);
        const int positions = all.clear + all.unclear;
        const int disagree = all.clear - all.clear_agree + all.unclear_disagree;
        pooled_positions += positions;
        pooled_disagree += disagree;
        std::printf("    greedy tokens differ at %d of %d positions (%.1f %%)\n", disagree,
                    positions, 100.0 * disagree / std::max(positions, 1));
        if (!all.failures.empty()) ++failed_cases;
        EXPECT_TRUE(all.failures.empty())
            << rc.name << ": " << all.failures.size()
            << " failures, the first: " << (all.failures.empty() ? "" : all.failures.front());
    }
    std::printf("%d cases failed; greedy tokens differ at %d of %d positions (%.2f %%)\n",
                failed_cases, pooled_disagree, pooled_positions,
                100.0 * pooled_disagree / std::max(pooled_positions, 1));
    // Exact mode: only after explained flips; default mode: after flips and at close calls.
    EXPECT_LE(pooled_disagree, (exact ? 0.02 : kDefaultShare) * pooled_positions);
}

// The checks themselves, on made-up records: they must fail where the GPU's choice does not
// follow from its logits, and where a flip is not a near-tie.
TEST(GpuDifferential, ChecksCatchWrongChoices) {
    RouteRecord c;
    c.tokens = 1;
    c.hidden = 2;
    c.experts = 4;
    c.top_k = 2;
    c.x = {1.0f, 2.0f};
    c.logits = {0.0f, 1.0f, 2.0f, 3.0f};
    c.bias = {0.0f, 0.0f, 0.0f, 0.0f};
    c.ids = {3, 2};
    c.weights = {0.5f, 0.5f};
    RouteRecord g = c;
    {  // the same records: nothing to say
        Report r;
        int64_t flip = INT64_MAX;
        compare_routes({c}, {g}, 0, true, flip, r);
        EXPECT_TRUE(r.failures.empty());
        EXPECT_EQ(flip, INT64_MAX);
    }
    g.ids = {3, 1};  // not what its own logits give
    {
        Report r;
        int64_t flip = INT64_MAX;
        compare_routes({c}, {g}, 5, true, flip, r);
        ASSERT_FALSE(r.failures.empty());
        EXPECT_NE(r.failures[0].find("GPU router chose"), std::string::npos) << r.failures[0];
        EXPECT_EQ(flip, 5);
    }
    g.logits = {0.0f, 2.5f, 2.0f, 3.0f};  // consistent with its logits, but far from a tie
    {
        Report r;
        int64_t flip = INT64_MAX;
        compare_routes({c}, {g}, 0, true, flip, r);
        ASSERT_EQ(r.failures.size(), 1u);
        EXPECT_NE(r.failures[0].find("not a near-tie"), std::string::npos) << r.failures[0];
    }
    c.logits = {0.0f, 2.0f, 2.0f + 2e-6f, 3.0f};  // a near-tie: explained
    g.logits = {0.0f, 2.0f + 4e-6f, 2.0f, 3.0f};
    g.x = {1.0f, 2.0f + 1e-6f};
    {
        Report r;
        int64_t flip = INT64_MAX;
        compare_routes({c}, {g}, 0, true, flip, r);
        EXPECT_TRUE(r.failures.empty()) << r.failures[0];
        EXPECT_EQ(r.flips.size(), 1u);
    }
}

TEST(GpuDifferential, ExactModeRandomConfigs) {
    run_cases(true);
}

TEST(GpuDifferential, DefaultModeRandomConfigs) {
    run_cases(false);
}

// Checkpoint folders named by MYRIAD_DIFF_DIRS (tools/divergence_case.py writes them).
TEST(GpuDifferential, CheckpointFolders) {
    const char* dirs = std::getenv("MYRIAD_DIFF_DIRS");
    if (!dirs) GTEST_SKIP() << "MYRIAD_DIFF_DIRS names no folders";
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    KernelOverrides mode("exact=1,graphs=0");
    std::stringstream list(dirs);
    std::string dir;
    while (std::getline(list, dir, ':')) {
        SCOPED_TRACE(dir);
        const ModelConfig c = load_model_config(dir);
        const Checkpoint ckpt = Checkpoint::open(dir);
        std::ifstream in(dir + "/prompts.json");
        ASSERT_TRUE(in) << dir << "/prompts.json";
        const json pj = json::parse(in);
        auto b = make_backends(c, ckpt, 32);
        int p = 0;
        for (const auto& pr : pj["prompts"]) {
            const std::vector<int32_t> prompt = pr.get<std::vector<int32_t>>();
            Report r = run_sequence(*b, prompt, pj.value("decode", 8), true, c.vocab_size);
            print_report(fmt::format("{} p{}", dir.substr(dir.rfind('/') + 1), p++), true, r);
            std::printf("    first greedy difference at position %lld (prompt %zu tokens)\n",
                        (long long)r.first_token_difference, prompt.size());
            if (pj.contains("hf_greedy")) {
                const auto hf = pj["hf_greedy"][p - 1].get<std::vector<int32_t>>();
                std::printf("    transformers %s\n    cpu          %s\n",
                            fmt::format("{}", fmt::join(hf, ",")).c_str(),
                            fmt::format("{}", fmt::join(r.cpu_greedy, ",")).c_str());
                EXPECT_EQ(r.cpu_greedy, hf) << "the CPU's greedy tokens differ from transformers'";
            }
            EXPECT_TRUE(r.failures.empty())
                << r.failures.size()
                << " failures, the first: " << (r.failures.empty() ? "" : r.failures.front());
        }
    }
}

}  // namespace
}  // namespace myriad::testing
