// myriad bench-model: the engine alone, no HTTP. Prefill and decode speed at several batch
// sizes, with the bytes each decode step reads per token and the machine's measured copy
// bandwidth (the device's with --device cuda) as the speed of light.
//
// --random SHAPE builds the model from generated weights (model/synthetic_model.h) through the
// ordinary loader, on the device itself with --device cuda (no files). Before timing, it runs
// one prefill step and one decode step at the benchmark's shapes on the device and on the CPU
// backend over the same weights (the first --check-layers layers: the CPU is slow) and stops if
// they disagree, so a fast wrong kernel cannot produce a figure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/bench_constrained.h"
#include "cli/bench_dataset.h"
#include "cli/commands.h"
#include "engine/device_choice.h"
#include "engine/scheduler.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/linear_format.h"
#include "model/model_config.h"
#include "model/synthetic_model.h"
#include "model/tensor_layout.h"
#include "ops/backend.h"
#include "ops/expert_stats.h"
#include "ops/step_sampling.h"
#include "parallel/step_all_reduces.h"
#include "plan/run_plan.h"
#include "plan/weight_inventory.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    std::string model;
    std::string random;  // a shape: build random weights instead of reading `model`
    int64_t layers = 0;
    std::string format = "bf16";
    int64_t check_layers = 2;
    std::string batches;     // default 1,4,16 (1,8,32,64 with --random)
    int64_t prompt_len = 0;  // default 128 (512 with --random)
    int64_t decode_steps = 32;
    int tp = 1;
    int rank = -1;             // >= 0: only this rank of --tp runs, collectives modelled
    double collective_us = 0;  // --rank: the modelled latency of each collective
    bool expert_parallel = false;
    std::string devices;
    int threads = 0;
    std::string device = "auto";
    bool json = false;
    int64_t spec_len = 0;      // --spec-len K: also time steps verifying K draft tokens a sequence
    double accept_rate = 0.7;  // --accept-rate R: each draft token accepted with probability R
    std::string dataset;       // --dataset FILE: the code-editing workload (bench_dataset.h)
    std::string dataset_tokens;  // its tokenizer's ids to use (default: by the model)
    bool force_answers = false;  // force the dataset's answers (always with --random)
    int64_t requests = 0;        // --dataset: its first N records (0: all)
    std::string json_schema;     // --json-schema FILE: decode again with every row constrained
    std::string tokenizer;       // --tokenizer DIR: the vocabulary the schema is matched over
};

// The dataset's tokenizer for this model: --dataset-tokens, else the one of the --random shape's
// vocabulary (bench/data/code_edit.jsonl's keys), else the model folder's name.
std::string dataset_tokens(const BenchArgs& a, const std::string& model_path) {
    if (!a.dataset_tokens.empty()) return a.dataset_tokens;
    if (a.random == "moonlight") return "deepseek_v3";
    if (a.random == "kimi-k2") return "cl100k_base";
    const size_t slash = model_path.find_last_not_of('/');
    const std::string trimmed = model_path.substr(0, slash + 1);
    return trimmed.substr(trimmed.find_last_of('/') + 1);
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Bytes per second of a large host memory copy (read + write counted), best of three.
double host_copy_bandwidth() {
    const size_t n = size_t{256} << 20;
    std::vector<char> a(n, 1), b(n, 2);
    double best = 0;
    for (int i = 0; i < 3; ++i) {
        auto t = Clock::now();
        std::memcpy(b.data(), a.data(), n);
        best = std::max(best, 2.0 * n / seconds_since(t));
        a[i] = b[n - 1 - i];
    }
    return best;
}

// Sequences [first, first + batch) each adding `len` tokens after `past`; sequence s owns
// blocks [s * blocks_per_seq, ...). Logits of each sequence's last token, or of `every`-th
// token of each sequence too when every > 0.
StepInput batch_step(int64_t first, int64_t batch, int64_t len, int64_t past, int64_t block_size,
                     int64_t blocks_per_seq, std::mt19937& rng, int64_t vocab, int64_t every = 0) {
    StepInput st;
    for (int64_t s = first; s < first + batch; ++s) {
        SeqSlice seq;
        seq.q_begin = st.num_tokens();
        seq.q_len = len;
        seq.ctx_len = past + len;
        for (int64_t b = 0; b * block_size < seq.ctx_len; ++b)
            seq.block_table.push_back(static_cast<BlockId>(s * blocks_per_seq + b));
        for (int64_t i = 0; i < len; ++i) {
            st.token_ids.push_back(static_cast<TokenId>(rng() % vocab));
            st.positions.push_back(static_cast<int32_t>(past + i));
            st.slots.push_back(s * blocks_per_seq * block_size + past + i);
            if (every > 0 && i % every == every - 1 && i != len - 1)
                st.logit_rows.push_back(static_cast<int32_t>(seq.q_begin + i));
        }
        st.logit_rows.push_back(static_cast<int32_t>(seq.q_begin + len - 1));
        st.seqs.push_back(std::move(seq));
    }
    return st;
}

// Speculative verification: sequences [0, pasts.size()) each adding its last token and `k` draft
// tokens after pasts[s] (k + 1 rows, all logit rows), as the engine's step builder makes them.
StepInput verify_step(const std::vector<int64_t>& pasts, int64_t k, int64_t block_size,
                      int64_t blocks_per_seq, std::mt19937& rng, int64_t vocab) {
    StepInput st;
    for (size_t s = 0; s < pasts.size(); ++s) {
        SeqSlice seq;
        seq.q_begin = st.num_tokens();
        seq.q_len = k + 1;
        seq.draft = k;
        seq.ctx_len = pasts[s] + k + 1;
        const int64_t first = static_cast<int64_t>(s) * blocks_per_seq;
        for (int64_t b = 0; b * block_size < seq.ctx_len; ++b)
            seq.block_table.push_back(static_cast<BlockId>(first + b));
        for (int64_t i = 0; i <= k; ++i) {
            st.token_ids.push_back(static_cast<TokenId>(rng() % vocab));
            st.positions.push_back(static_cast<int32_t>(pasts[s] + i));
            st.slots.push_back(first * block_size + pasts[s] + i);
            st.logit_rows.push_back(static_cast<int32_t>(seq.q_begin + i));
        }
        st.seqs.push_back(std::move(seq));
    }
    return st;
}

std::vector<int64_t> parse_batches(const std::string& list) {
    std::vector<int64_t> batches;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            batches.push_back(std::stoll(item));
        } catch (...) {
            bad_input("--batch: '{}' is not a number", item);
        }
        if (batches.back() < 1) bad_input("--batch: {} must be at least 1", batches.back());
    }
    if (batches.empty()) bad_input("--batch: no batch size given");
    return batches;
}

// Device bytes of a weight of `shape` stored in `f` (GPU layout: dense matrices BF16, vectors
// F32, FP8 codes with F32 block scales, NVFP4 nibbles with an e4m3 scale per 16).
double weight_bytes(const ModelConfig& c, const ExpectedTensor& t, WeightFormat f, bool gpu) {
    const double n = static_cast<double>(
        std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1}, std::multiplies<>()));
    if (!gpu) return n * 4;  // the CPU backend holds dense weights as F32
    if (t.shape.size() < 2) return n * 4;
    switch (f) {
        case WeightFormat::Fp8Block:
            return n * (1.0 + 4.0 / double(c.quant.block_rows * c.quant.block_cols));
        case WeightFormat::Nvfp4:
            return n * (0.5 + 1.0 / 16);
        default:
            return n * 2;
    }
}

struct Roofline {
    double dense = 0;       // bytes read once per step whatever the batch (embedding excluded)
    double per_expert = 0;  // one routed expert of one layer (the part one rank holds)
    double embed_row = 0;   // one token's embedding row, spread over the ranks holding the rows
    int64_t moe_layers = 0;
    double held_experts = 0;  // routed experts per layer `layout`'s rank holds (some of each: all)
};

// The bytes `layout`'s rank holds (the whole model with the default one-rank layout).
Roofline roofline(const ModelConfig& c, bool gpu, const Layout& layout = Layout()) {
    Roofline r;
    double expert_bytes = 0;
    std::set<std::string> held_experts;  // "model.layers.L.mlp.experts.E." of each held expert
    for (const auto& t : expected_tensors(c)) {
        // kv_b_proj is held dense (BF16) whatever the format: the absorbed ops read it.
        const WeightFormat f = is_linear_weight(t.name) && !t.name.ends_with("kv_b_proj.weight")
                                   ? linear_format(c, t.name, "")
                                   : WeightFormat::Dense;
        const TensorShard sh = tensor_shard(c, t, layout);
        const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
        const int64_t cols = t.shape.size() == 2 ? t.shape[1] : t.shape[0];
        const double held = sh.held ? double(sh.rows.size()) * double(sh.cols.size()) /
                                          (double(rows) * double(cols))
                                    : 0.0;
        const double b = weight_bytes(c, t, f, gpu) * held;
        if (t.name == "model.embed_tokens.weight") {
            r.embed_row = b / double(c.vocab_size);
        } else if (t.expert >= 0) {
            expert_bytes += b;
            const std::string key = fmt::format(".experts.{}.", t.expert);
            if (sh.held) held_experts.insert(t.name.substr(0, t.name.find(key) + key.size()));
        } else {
            r.dense += b;
        }
    }
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) r.moe_layers += c.is_moe_layer(l);
    if (!held_experts.empty() && r.moe_layers > 0) {
        r.per_expert = expert_bytes / double(held_experts.size());
        r.held_experts = double(held_experts.size()) / double(r.moe_layers);
    }
    return r;
}

// Expected distinct experts per layer when `tokens` each choose k of E uniformly at random.
double uniform_distinct(const ModelConfig& c, int64_t tokens) {
    if (c.n_routed_experts == 0) return 0;
    const double e = double(c.n_routed_experts), k = double(c.num_experts_per_tok);
    return e * (1.0 - std::pow(1.0 - k / e, double(tokens)));
}

struct RowErrors {
    double worst = 0, median = 0, within = 0;  // within: share of rows with error <= 2e-2
};

RowErrors row_errors(const std::vector<float>& dev, const std::vector<float>& cpu, int64_t vocab) {
    std::vector<double> errs;
    for (size_t r = 0; r < cpu.size() / size_t(vocab); ++r) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < vocab; ++i) {
            const double d = double(dev[r * vocab + i]) - cpu[r * vocab + i];
            num += d * d;
            den += double(cpu[r * vocab + i]) * cpu[r * vocab + i];
        }
        const double e = std::sqrt(num / std::max(den, 1e-30));
        errs.push_back(std::isfinite(e) ? e : 1e30);
    }
    RowErrors out;
    if (errs.empty()) return out;
    std::sort(errs.begin(), errs.end());
    out.worst = errs.back();
    out.median = errs[errs.size() / 2];
    out.within =
        double(std::count_if(errs.begin(), errs.end(), [](double e) { return e <= 2e-2; })) /
        double(errs.size());
    return out;
}

// One prefill step of one `prompt`-token sequence (logits at 16 of its positions) and one
// decode step of `batch` sequences after a short prompt each, on the device and on the CPU over
// the same generated weights. Returns the JSON record; stops (exit 1) when they disagree.
nlohmann::ordered_json check_against_cpu(const BenchArgs& a, Device device, int64_t prompt,
                                         int64_t batch, uint64_t seed) {
    const ModelConfig c = random_model_config(a.random, a.check_layers, a.format);
    const Checkpoint ckpt = Checkpoint::synthetic(seed);
    WorkerGroupOptions wo;
    wo.threads = a.threads;
    const int64_t short_prompt = 8;
    const int64_t bps =
        (std::max(prompt, short_prompt + 1) + wo.kv_block_size - 1) / wo.kv_block_size;
    wo.kv_blocks = bps * (batch + 1);
    const int64_t vocab = c.vocab_size;
    std::vector<std::vector<float>> out[2];
    for (int side = 0; side < 2; ++side) {
        wo.device = side == 0 ? device : Device::Cpu;
        auto t = Clock::now();
        WorkerGroup w(c, ckpt, wo);
        log::info("check: {} layers built on the {} in {:.1f} s", c.num_hidden_layers,
                  side == 0 ? "device" : "CPU", seconds_since(t));
        std::mt19937 rng(7);  // the same token ids on both sides
        auto run = [&](const StepInput& st) {
            std::vector<float> logits(st.logit_rows.size() * size_t(vocab));
            w.step(st, logits.data());
            out[side].push_back(std::move(logits));
        };
        run(batch_step(batch, 1, prompt, 0, wo.kv_block_size, bps, rng, vocab, prompt / 16));
        run(batch_step(0, batch, short_prompt, 0, wo.kv_block_size, bps, rng, vocab));
        run(batch_step(0, batch, 1, short_prompt, wo.kv_block_size, bps, rng, vocab));
        log::info("check: {} steps run in {:.1f} s", out[side].size(), seconds_since(t));
    }
    const RowErrors pre = row_errors(out[0][0], out[1][0], vocab);
    const RowErrors dec = row_errors(out[0][2], out[1][2], vocab);
    nlohmann::ordered_json j = {{"layers", a.check_layers},
                                {"prefill",
                                 {{"rows", out[0][0].size() / vocab},
                                  {"worst", pre.worst},
                                  {"median", pre.median},
                                  {"within_2e-2", pre.within}}},
                                {"decode",
                                 {{"rows", batch},
                                  {"worst", dec.worst},
                                  {"median", dec.median},
                                  {"within_2e-2", dec.within}}}};
    if (!a.json)
        std::printf(
            "check against the CPU backend (%lld layers, same weights): prefill %lld rows worst "
            "%.2e median %.2e, %.0f%% within 2e-2; decode %lld rows worst %.2e median %.2e, "
            "%.0f%% within 2e-2\n",
            (long long)a.check_layers, (long long)(out[0][0].size() / vocab), pre.worst, pre.median,
            100 * pre.within, (long long)batch, dec.worst, dec.median, 100 * dec.within);
    // Router near-ties may flip an expert for a few rows (BF16 GEMM inputs above 16 rows); a
    // wrong kernel moves every row.
    if (pre.median > 2e-2 || dec.median > 2e-2 || pre.within < 0.75 || dec.within < 0.75)
        internal_error(
            "bench-model --random: the {} backend disagrees with the CPU backend on the same "
            "weights (prefill median {:.2e}, decode median {:.2e}); no timing is reported",
            device == Device::Cuda ? "cuda" : "cpu", pre.median, dec.median);
    return j;
}

bool constrained_flag(const BenchArgs& a) {
    return !a.json_schema.empty();
}

int run_bench(const BenchArgs& in) {
    BenchArgs a = in;
    const bool random = !a.random.empty();
    const bool dataset = !a.dataset.empty();
    if (a.batches.empty()) a.batches = dataset ? "1,8" : (random ? "1,8,32,64" : "1,4,16");
    if (dataset && a.spec_len == 0) a.spec_len = 3;
    if (!dataset && (!a.dataset_tokens.empty() || a.force_answers || a.requests != 0))
        bad_input("--dataset-tokens, --force-answers and --requests apply to --dataset only");
    if (a.requests < 0) bad_input("--requests {} must not be negative", a.requests);
    if (a.prompt_len == 0) a.prompt_len = random ? 512 : 128;
    const std::vector<int64_t> batches = parse_batches(a.batches);
    if (a.prompt_len < 1 || a.decode_steps < 1)
        bad_input("--prompt-len and --decode-steps must be at least 1");
    if (a.spec_len < 0 || a.spec_len > 64)
        bad_input("--spec-len {} must be in [0, 64]", a.spec_len);
    if (!a.tokenizer.empty() && !constrained_flag(a))
        bad_input("--tokenizer applies to --json-schema only");
    if (constrained_flag(a) && (dataset || a.spec_len > 0))
        bad_input("--json-schema times plain decode steps: not with --dataset or --spec-len");
    if (constrained_flag(a) && random && a.tokenizer.empty())
        bad_input(
            "--json-schema with --random needs --tokenizer DIR (a tokenizer folder whose "
            "vocabulary the schema's masks are made over, e.g. build/tokenizers/deepseek_v3)");
    if (!(a.accept_rate >= 0 && a.accept_rate <= 1))
        bad_input("--accept-rate {} must be in [0, 1]", a.accept_rate);
    if (!random && (a.layers != 0 || a.format != "bf16"))
        bad_input("--layers and --format apply to --random models only");
    if (random && !a.model.empty())
        bad_input("give a model folder or --random {}, not both", a.random);
    const bool alone = a.rank >= 0;
    if (alone && (a.tp < 2 || a.rank >= a.tp))
        bad_input("--rank {} needs --tp of at least 2 and a rank below it (0 to tp - 1)", a.rank);
    if (!alone && a.collective_us != 0)
        bad_input("--collective-us models the collectives of one rank: give --rank too");
    if (a.collective_us < 0) bad_input("--collective-us {} must not be negative", a.collective_us);
    // One rank's numbers are not the model's (its collectives only wait): nothing to check.
    if (alone) a.check_layers = 0;
    const int gpus = alone ? 1 : a.tp;              // GPUs the run uses
    const uint64_t seed = 0x6d797269616400ull + 1;  // fixed: runs are comparable

    std::string name;
    ModelConfig c;
    Checkpoint ckpt =
        random ? Checkpoint::synthetic(seed) : Checkpoint::open(resolve_model(a.model));
    if (random) {
        c = random_model_config(a.random, a.layers, a.format);
        name = fmt::format("random {} {} ({} layers)", a.random, a.format, c.num_hidden_layers);
    } else {
        name = ckpt.path();
        c = load_model_config(name);
    }
    const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
    // The run plan decides the device, the ranks' GPUs, the layout and the latent cache
    // (plan/run_plan.h), before any weight is built or read; the cache holds exactly the
    // benchmark's sequences.
    const int64_t warm_steps = 3, stat_steps = 2;
    const bool constrained = !a.json_schema.empty();
    int64_t per_seq = a.prompt_len + warm_steps + a.decode_steps + stat_steps +
                      (warm_steps + a.decode_steps) * (a.spec_len + 1) +
                      (constrained ? warm_steps + a.decode_steps : 0);
    std::vector<CodeEditRecord> records;
    if (dataset) {  // each sequence holds its prompt, its answer and a last draft
        records = load_code_edit_dataset(a.dataset, dataset_tokens(a, name), c.vocab_size);
        if (a.requests > 0 && a.requests < static_cast<int64_t>(records.size()))
            records.resize(static_cast<size_t>(a.requests));
        per_seq = 0;
        for (const CodeEditRecord& r : records)
            per_seq =
                std::max<int64_t>(per_seq, static_cast<int64_t>(r.prompt.size() + r.answer.size()));
        per_seq += a.spec_len + 1;
    }
    // One rank alone (--rank) is no run the plan knows (its layout needs GPUs this machine may
    // not have): its device is chosen as one rank's, and its shard's kernels by the workers.
    plan::RunPlan run;
    if (alone) {
        std::string device_note;
        run.device = choose_device(a.device, gpus, c, ckpt, &device_note, a.devices);
        if (!device_note.empty() && !a.json) std::printf("%s\n", device_note.c_str());
        if (run.device == Device::Cuda) run.devices = parse_devices(a.devices, gpus);
        run.threads = a.threads;
        run.tp = a.tp;
    } else {
        plan::RunFlags rf;
        rf.device = a.device;
        rf.tp = a.tp;
        rf.expert_parallel = a.expert_parallel;
        rf.devices = a.devices;
        rf.threads = a.threads;
        rf.max_model_len = std::min(per_seq, c.max_position_embeddings);
        rf.max_num_seqs = max_batch;
        rf.max_num_batched_tokens =
            dataset ? SchedulerConfig{}.max_num_batched_tokens : std::max(max_batch, a.prompt_len);
        rf.kv_blocks = (per_seq + kKvBlockSize - 1) / kKvBlockSize * max_batch;
        plan::WeightInventory inventory;
        if (random) {
            inventory = plan::weights_from_config(c);
        } else {
            std::vector<TensorInfo> tensors;
            for (const auto& f : ckpt.files())
                tensors.insert(tensors.end(), f->tensors().begin(), f->tensors().end());
            inventory = plan::weights_from_headers(c, tensors);
        }
        const plan::ModelHeaders headers{name, &c, random ? nullptr : &ckpt, &inventory};
        run = plan::make_run_plan(rf, headers, plan::probe_machine());
    }
    const Device device = run.device;
    a.device = device == Device::Cuda ? "cuda" : "cpu";  // as the report names it
    if (!a.json && !alone) {
        std::printf("device: %s (%s)\n", a.device.c_str(), run.device_reason.c_str());
        for (const std::string& k : run.kernels) std::printf("%s\n", k.c_str());
    }
    nlohmann::ordered_json check;
    if (random && a.check_layers > 0) {
        a.check_layers = std::min(a.check_layers, c.num_hidden_layers);
        check = check_against_cpu(a, device, a.prompt_len, max_batch, seed);
    } else if (random && !a.json) {
        std::printf("no check against the CPU backend (%s)\n",
                    alone ? "--rank: one rank alone computes no real output" : "--check-layers 0");
    }

    WorkerGroupOptions wo;
    wo.tp = alone ? a.tp : run.tp;
    wo.expert_parallel = a.expert_parallel;
    wo.threads = run.threads;
    wo.device = run.device;
    wo.devices = run.devices;
    if (!alone) wo.kv_block_size = run.kv_block_size;
    wo.kv_blocks = (per_seq + wo.kv_block_size - 1) / wo.kv_block_size * max_batch;
    if (!random && !alone) wo.planned_kv_dtype = run.kv_dtype;  // random: the workers' own choice
    wo.only_rank = a.rank;
    wo.modelled_collective_us = a.collective_us;
    const int64_t blocks_per_seq = (per_seq + wo.kv_block_size - 1) / wo.kv_block_size;
    auto t_load = Clock::now();
    WorkerGroup workers(c, ckpt, wo);
    const double load_s = seconds_since(t_load);
    if (dataset) {
        DatasetBenchOptions o;
        o.concurrencies = batches;
        o.spec_len = a.spec_len;
        o.force = random || a.force_answers;
        o.json = a.json;
        if (!a.json)
            std::printf("%s: %.1f s to build, %.2f GB of weights\n", name.c_str(), load_s,
                        workers.weight_bytes_per_rank() / 1e9);
        const nlohmann::ordered_json res = run_dataset_bench(workers, records, o);
        if (a.json) {
            const nlohmann::ordered_json out = {{"model", name},
                                                {"device", a.device},
                                                {"tp", a.tp},
                                                {"dataset", a.dataset},
                                                {"forced_answers", o.force},
                                                {"spec_len", a.spec_len},
                                                {"check", check},
                                                {"results", res}};
            std::printf("%s\n", out.dump(2).c_str());
        }
        return 0;
    }
    std::unique_ptr<ConstrainedBatch> cons;
    if (constrained)
        cons = std::make_unique<ConstrainedBatch>(
            a.json_schema, a.tokenizer.empty() ? name : a.tokenizer, c.vocab_size);
    const bool gpu = device == Device::Cuda;
    const double bandwidth = gpu ? cuda_copy_bandwidth(0) : host_copy_bandwidth();
    // One rank alone: the bytes it holds (its shard); else the whole model on the one device.
    const Roofline roof =
        roofline(c, gpu, alone ? Layout(a.tp, a.expert_parallel, a.rank) : Layout());
    const double kv_token_bytes = double(c.kv_lora_rank + c.qk_rope_head_dim) *
                                  double(dtype_size(workers.kv_cache_dtype())) *
                                  double(c.num_hidden_layers);

    // The all-reduces each decode step issues, and what they cost by the start-up measurement
    // (the group's, where it measured: GPU ranks with kernels over peer memory).
    const CommGroup* comm = workers.comm_group();
    if (comm && !comm->measured_all_reduce().empty() && !a.json)
        std::printf("all-reduce: %s\n", comm->measured_all_reduce().c_str());

    std::mt19937 rng(1);
    // The most logit rows of a step: every row of a verifying step (a prefill step gives one a
    // sequence, and has at most max_batch of them), never one a prompt token (32k prompts would
    // have asked 21 GB here).
    std::vector<float> logits(static_cast<size_t>(max_batch * (a.spec_len + 1) * c.vocab_size));
    // Where the backend samples (one GPU), steps choose greedy tokens there and copy back only
    // their ids, as the server does; otherwise every logit row comes back to the host.
    const bool device_tokens = workers.backend_samples();
    StepSampling greedy;
    std::vector<int32_t> tokens;
    auto run_step = [&](const StepInput& st) {
        if (!device_tokens) return workers.step(st, logits.data());
        greedy.rows.assign(st.logit_rows.size(), SampleRow{});
        tokens.resize(st.logit_rows.size());
        workers.step(st, logits.data(), &greedy, tokens.data());
    };
    // Prefill of one prompt (pp512 with --random): one untimed, median of three timed.
    double prefill_tps = 0;
    {
        std::vector<double> times;
        for (int i = 0; i < 4; ++i) {
            StepInput pre = batch_step(0, 1, a.prompt_len, 0, wo.kv_block_size, blocks_per_seq, rng,
                                       c.vocab_size);
            auto t = Clock::now();
            run_step(pre);
            if (i > 0) times.push_back(seconds_since(t));
        }
        std::sort(times.begin(), times.end());
        prefill_tps = double(a.prompt_len) / times[1];
    }

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    struct {
        int64_t all_reduces = 0, gathers = 0;
    } collectives;
    // --rank: the step of every rank projected at all-reduce latencies of real machines (NVLink
    // one-shot 8 us, PCIe 12 us: anchors.md; NCCL inside a graph on two H200s 18 us).
    const double project_us[] = {0, 8, 12, 18};
    std::vector<std::vector<double>> projected;  // per batch: tok/s at each of project_us
    if (!a.json) {
        std::printf("%s: %.1f s to build, %.2f GB of weights; prefill of %lld tokens: %.1f tok/s\n",
                    name.c_str(), load_s, workers.weight_bytes_per_rank() / 1e9,
                    (long long)a.prompt_len, prefill_tps);
        std::printf("%-6s %12s %12s %10s %14s %12s %12s %10s %8s\n", "batch", "prefill t/s",
                    "decode t/s", "step ms", "read MB/token", "experts", "uniform", "GB/s",
                    "of copy");
    }
    for (int64_t batch : batches) {
        // The batch's prompts (timed as a batched prefill), warm-up decode steps (the first runs
        // op by op, the second is captured as a graph), timed decode steps, then two steps
        // counting distinct experts (op by op).
        // The prompts go in steps of at most 4,096 tokens (as the server's scheduler would cut
        // them): a step's scratch memory grows with its tokens.
        const int64_t per_step = std::max<int64_t>(1, 4096 / a.prompt_len);
        auto t0 = Clock::now();
        for (int64_t s0 = 0; s0 < batch; s0 += per_step) {
            StepInput pre = batch_step(s0, std::min(per_step, batch - s0), a.prompt_len, 0,
                                       wo.kv_block_size, blocks_per_seq, rng, c.vocab_size);
            run_step(pre);
        }
        const double batch_prefill_s = seconds_since(t0);
        int64_t past = a.prompt_len;
        auto decode = [&] {
            StepInput st = batch_step(0, batch, 1, past++, wo.kv_block_size, blocks_per_seq, rng,
                                      c.vocab_size);
            run_step(st);
        };
        // The first decode step runs op by op: the collectives it issues are every step's.
        const int64_t reduces_before = workers.modelled_all_reduces();
        const int64_t gathers_before = workers.modelled_gathers();
        const std::map<size_t, int64_t> counts_before =
            comm ? comm->all_reduce_counts() : std::map<size_t, int64_t>{};
        decode();
        collectives.all_reduces = workers.modelled_all_reduces() - reduces_before;
        collectives.gathers = workers.modelled_gathers() - gathers_before;
        const StepAllReduces step_reduces =
            comm ? step_all_reduces(*comm, counts_before) : StepAllReduces{};
        for (int64_t i = 1; i < warm_steps; ++i) decode();
        const int64_t timed_past = past;
        auto t1 = Clock::now();
        for (int64_t i = 0; i < a.decode_steps; ++i) decode();
        const double step_s = seconds_since(t1) / double(a.decode_steps);
        ExpertStats& stats = expert_stats();
        stats = ExpertStats{};
        stats.enabled = true;
        for (int64_t i = 0; i < stat_steps; ++i) decode();
        stats.enabled = false;
        const double distinct =
            stats.layer_steps > 0 ? double(stats.distinct) / double(stats.layer_steps) : 0.0;
        const double mean_ctx = double(timed_past) + double(a.decode_steps) / 2.0;
        const double step_bytes = roof.dense + double(batch) * roof.embed_row +
                                  distinct * roof.per_expert * double(roof.moe_layers) +
                                  double(batch) * mean_ctx * kv_token_bytes;
        const double decode_tps = double(batch) / step_s;
        if (alone) {
            const double n = double(collectives.all_reduces + collectives.gathers);
            const double compute_s = std::max(0.0, step_s - n * a.collective_us * 1e-6);
            std::vector<double> row;
            for (double us : project_us) row.push_back(double(batch) / (compute_s + n * us * 1e-6));
            projected.push_back(std::move(row));
        }
        const double gbs = step_bytes / step_s / 1e9;
        // Speculation: steps verifying spec_len draft tokens a sequence (its last token and the
        // draft: spec_len + 1 rows, every one a logit row), each draft token accepted with
        // probability accept_rate until the first rejection (forced: the tokens are random); a
        // sequence then advances 1 + accepted positions.
        double spec_step_s = 0, spec_tokens_per_step = 0;
        if (a.spec_len > 0) {
            std::vector<int64_t> pasts(static_cast<size_t>(batch), past);
            std::mt19937 accept_rng(5);
            std::uniform_real_distribution<double> u(0.0, 1.0);
            int64_t advanced = 0;
            auto verify = [&] {
                run_step(verify_step(pasts, a.spec_len, wo.kv_block_size, blocks_per_seq, rng,
                                     c.vocab_size));
                for (int64_t& p : pasts) {
                    int64_t acc = 0;
                    while (acc < a.spec_len && u(accept_rng) < a.accept_rate) ++acc;
                    p += 1 + acc;
                    advanced += 1 + acc;
                }
            };
            for (int64_t i = 0; i < warm_steps; ++i) verify();
            advanced = 0;
            auto t2 = Clock::now();
            for (int64_t i = 0; i < a.decode_steps; ++i) verify();
            spec_step_s = seconds_since(t2) / double(a.decode_steps);
            spec_tokens_per_step = double(advanced) / double(a.decode_steps * batch);
        }
        // --json-schema: the same decode steps again, every row constrained; the difference is
        // the host's masks and matchers plus the masks' trip to the device and their use there.
        double cons_step_s = 0, cons_host_s = 0;
        int64_t cons_docs = 0;
        if (cons) {
            StepSampling masked;
            auto decode_constrained = [&] {
                StepInput st = batch_step(0, batch, 1, past++, wo.kv_block_size, blocks_per_seq,
                                          rng, c.vocab_size);
                if (device_tokens) {
                    cons->fill(masked);
                    tokens.resize(st.logit_rows.size());
                    workers.step(st, logits.data(), &masked, tokens.data());
                } else {
                    workers.step(st, logits.data());
                    cons->choose(logits.data(), tokens);
                }
                cons->accept(tokens);
            };
            cons->reset(batch);
            for (int64_t i = 0; i < warm_steps; ++i) decode_constrained();
            cons->reset(batch);
            auto t3 = Clock::now();
            for (int64_t i = 0; i < a.decode_steps; ++i) decode_constrained();
            cons_step_s = seconds_since(t3) / double(a.decode_steps);
            cons_host_s = cons->host_s() / double(a.decode_steps);
            cons_docs = cons->documents();
        }
        results.push_back({{"batch", batch},
                           {"prompt_len", a.prompt_len},
                           {"batch_prefill_tok_s", double(batch * a.prompt_len) / batch_prefill_s},
                           {"decode_tok_s", decode_tps},
                           {"decode_step_ms", step_s * 1e3},
                           {"read_bytes_per_step", step_bytes},
                           {"read_bytes_per_token", step_bytes / double(batch)},
                           {"experts_per_layer", distinct},
                           {"experts_uniform", uniform_distinct(c, batch)},
                           {"read_gb_s", gbs},
                           {"copy_gb_s", bandwidth / 1e9}});
        if (!step_reduces.sizes.empty()) {
            nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
            for (const StepAllReduces::Size& z : step_reduces.sizes)
                sizes.push_back({{"bytes", z.bytes},
                                 {"count", z.count},
                                 {"algorithm", z.algorithm},
                                 {"us_each", z.us}});
            results.back()["all_reduces"] = {{"sizes", sizes},
                                             {"ms_per_step", step_reduces.ms},
                                             {"share_of_step", step_reduces.ms * 1e-3 / step_s}};
        }
        if (alone) {
            nlohmann::ordered_json p = nlohmann::ordered_json::object();
            for (size_t i = 0; i < std::size(project_us); ++i)
                p[fmt::format("{:g}", project_us[i])] = projected.back()[i];
            results.back()["projected_tok_s_at_collective_us"] = p;
        }
        if (cons)
            results.back()["json_schema"] = {{"file", a.json_schema},
                                             {"decode_step_ms", cons_step_s * 1e3},
                                             {"decode_tok_s", double(batch) / cons_step_s},
                                             {"overhead", cons_step_s / step_s - 1.0},
                                             {"host_ms_per_step", cons_host_s * 1e3},
                                             {"documents_finished", cons_docs},
                                             {"grammar_states", cons->states()}};
        if (a.spec_len > 0) {
            const double spec_tps = double(batch) * spec_tokens_per_step / spec_step_s;
            results.back()["spec"] = {{"spec_len", a.spec_len},
                                      {"accept_rate", a.accept_rate},
                                      {"verify_step_ms", spec_step_s * 1e3},
                                      {"verify_over_decode_step", spec_step_s / step_s},
                                      {"tokens_per_step", spec_tokens_per_step},
                                      {"tok_s", spec_tps},
                                      {"speedup", spec_tps / decode_tps}};
        }
        if (!a.json)
            std::printf("%-6lld %12.1f %12.1f %10.3f %14.1f %12.1f %12.1f %10.1f %7.1f%%\n",
                        (long long)batch, double(batch * a.prompt_len) / batch_prefill_s,
                        decode_tps, step_s * 1e3, step_bytes / double(batch) / 1e6, distinct,
                        uniform_distinct(c, batch), gbs, 100.0 * gbs * 1e9 / bandwidth);
        if (!a.json && !step_reduces.sizes.empty()) {
            std::string parts;
            for (const StepAllReduces::Size& z : step_reduces.sizes)
                parts +=
                    fmt::format("{}{} of {} B ({}{})", parts.empty() ? "" : ", ", z.count, z.bytes,
                                z.algorithm, z.us >= 0 ? fmt::format(", {:.1f} us", z.us) : "");
            std::printf("       all-reduces a step: %s%s\n", parts.c_str(),
                        step_reduces.ms >= 0
                            ? fmt::format(" = {:.3f} ms ({:.0f}% of the step; times measured at "
                                          "start)",
                                          step_reduces.ms, 100.0 * step_reduces.ms * 1e-3 / step_s)
                                  .c_str()
                            : "");
        }
        if (!a.json && cons)
            std::printf(
                "       json schema: step %.3f ms (%+.1f%% against unconstrained; host masks and "
                "matchers %.3f ms a step), %.1f tok/s, %lld documents finished\n",
                cons_step_s * 1e3, 100.0 * (cons_step_s / step_s - 1.0), cons_host_s * 1e3,
                double(batch) / cons_step_s, (long long)cons_docs);
        if (!a.json && a.spec_len > 0) {
            const double spec_tps = double(batch) * spec_tokens_per_step / spec_step_s;
            std::printf(
                "       verify %lld drafts (accept %.2f): step %.3f ms (%.2fx decode), %.2f tokens "
                "a step, %.1f tok/s (%.2fx)\n",
                (long long)a.spec_len, a.accept_rate, spec_step_s * 1e3, spec_step_s / step_s,
                spec_tokens_per_step, spec_tps, spec_tps / decode_tps);
        }
    }
    // Bytes one batch-1 decode token must move at least: the weights it touches once.
    // (One rank under expert parallelism holds a token's experts with the share of its block.)
    const double k = double(std::min(c.num_experts_per_tok, c.n_routed_experts));
    const double k_held = c.n_routed_experts > 0
                              ? k * std::min(1.0, roof.held_experts / double(c.n_routed_experts))
                              : 0.0;
    const double floor_bytes =
        roof.dense + roof.embed_row +
        (alone && a.expert_parallel ? k_held : k) * roof.per_expert * double(roof.moe_layers);
    if (cons && !a.json)
        std::printf(
            "json schema %s: compiled in %.2f ms, %.1f us from the cache; %lld grammar "
            "states after the runs\n",
            a.json_schema.c_str(), cons->compile_s() * 1e3, cons->cached_compile_s() * 1e6,
            (long long)cons->states());
    if (a.json) {
        nlohmann::ordered_json out = {{"model", name},
                                      {"tp", a.tp},
                                      {"rank", alone ? nlohmann::ordered_json(a.rank) : nullptr},
                                      {"collective_us", a.collective_us},
                                      {"all_reduces_per_step", collectives.all_reduces},
                                      {"gathers_per_step", collectives.gathers},
                                      {"threads", workers.options().threads},
                                      {"device", a.device},
                                      {"copy_gb_s", bandwidth / 1e9},
                                      {"prefill_tok_s", prefill_tps},
                                      {"tokens_chosen_on", device_tokens ? "device" : "host"},
                                      {"batch1_floor_bytes", floor_bytes},
                                      {"check", check},
                                      {"results", results}};
        if (cons)
            out["json_schema"] = {{"file", a.json_schema},
                                  {"compile_ms", cons->compile_s() * 1e3},
                                  {"cached_compile_us", cons->cached_compile_s() * 1e6}};
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::printf(
            "%s copy %.1f GB/s (read + write); batch-1 roofline %.2f GB/token -> %.0f tok/s; "
            "tp %d, %d threads; %s\n",
            gpu ? "device" : "host memcpy", bandwidth / 1e9, floor_bytes / 1e9,
            bandwidth / floor_bytes, a.tp, workers.options().threads,
            device_tokens ? "greedy tokens chosen on the device (ids copied back)"
                          : "logits copied to the host");
        if (alone) {
            std::printf(
                "rank %d of %d alone (its shard: %.2f GB; roofline above is its bytes): a decode "
                "step issues %lld all-reduces and %lld gathers, each modelled as a %.1f us wait\n",
                a.rank, a.tp, workers.weight_bytes_per_rank() / 1e9,
                (long long)collectives.all_reduces, (long long)collectives.gathers,
                a.collective_us);
            std::printf(
                "single-stream projection for %d ranks on %d GPUs (every rank's step as "
                "this one's, collectives at the latency below):\n",
                a.tp, a.tp);
            std::printf("%-6s", "batch");
            for (double us : project_us) std::printf(" %9s", fmt::format("{:g} us", us).c_str());
            std::printf("   (tok/s)\n");
            for (size_t b = 0; b < batches.size(); ++b) {
                std::printf("%-6lld", (long long)batches[b]);
                for (double v : projected[b]) std::printf(" %9.1f", v);
                std::printf("\n");
            }
        }
    }
    return 0;
}

}  // namespace

Run add_bench_model(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--random", a->random,
                   "random weights of a known shape instead of a model folder: moonlight or "
                   "kimi-k2 (built on the device; no files)");
    app.add_option("--layers", a->layers, "--random: decoder layers (default: all)");
    app.add_option("--format", a->format,
                   "--random: bf16 (default), fp8 (DeepSeek FP8 blocks) or nvfp4 (routed experts "
                   "NVFP4, the rest BF16)");
    app.add_option("--check-layers", a->check_layers,
                   "--random: layers of the check against the CPU backend before timing (default "
                   "2; 0: no check)");
    app.add_option("--batch", a->batches,
                   "comma-separated batch sizes (default 1,4,16; 1,8,32,64 with --random)");
    app.add_option("--prompt-len", a->prompt_len,
                   "prompt tokens per sequence (default 128; 512 with --random)");
    app.add_option("--decode-steps", a->decode_steps, "decode steps timed (default 32)");
    app.add_option("--spec-len", a->spec_len,
                   "also time speculative verification: steps of K draft tokens a sequence "
                   "(K + 1 rows each; default 0: none)");
    app.add_option("--accept-rate", a->accept_rate,
                   "--spec-len: the forced probability that each draft token is accepted, until "
                   "the first rejection (default 0.7)");
    app.add_option("--dataset", a->dataset,
                   "run the code-editing workload instead (bench/data/code_edit.jsonl, by "
                   "tools/make_code_edit_dataset.py) at each --batch concurrency (default 1,8), "
                   "without and with ngram speculation (--spec-len, default 3): accepted tokens a "
                   "step and tok/s per sequence; --random models are forced through its answers");
    app.add_option("--dataset-tokens", a->dataset_tokens,
                   "--dataset: whose token ids to use (myriad-tiny, deepseek_v3, cl100k_base; "
                   "default: the model folder's name, deepseek_v3 for --random moonlight, "
                   "cl100k_base for kimi-k2)");
    app.add_option("--requests", a->requests, "--dataset: run its first N records (default: all)");
    app.add_flag("--force-answers", a->force_answers,
                 "--dataset: force the answers on a model folder too (default: it generates)");
    app.add_option("--json-schema", a->json_schema,
                   "decode each batch again with every sequence constrained to this JSON schema "
                   "(structured output), to time the masks' cost");
    app.add_option("--tokenizer", a->tokenizer,
                   "--json-schema: the tokenizer folder the masks are made over (default: the "
                   "model's; needed with --random)");
    app.add_option("--tp", a->tp, "tensor-parallel ranks (default 1)");
    app.add_flag("--expert-parallel", a->expert_parallel, "whole routed experts per rank");
    app.add_option("--rank", a->rank,
                   "with --tp N: build and time only this rank's shard (0 to N-1), on one device, "
                   "its collectives replaced by a wait of --collective-us; prints the step "
                   "projected at real all-reduce latencies");
    app.add_option("--collective-us", a->collective_us,
                   "--rank: microseconds each collective waits (default 0: none)");
    app.add_option("--devices", a->devices,
                   "the GPU of each rank, e.g. 0,1 or 0,0,0,0 (default: MYRIAD_CUDA_DEVICES, else "
                   "GPUs 0 to tp-1)");
    app.add_option("--threads", a->threads, "CPU threads in all (default: all cores)");
    app.add_option("--device", a->device,
                   "auto (default: cuda when a GPU is present, else cpu), cpu or cuda");
    app.add_flag("--json", a->json, "print results as JSON");
    return [a] { return run_bench(*a); };
}

}  // namespace myriad::cli
