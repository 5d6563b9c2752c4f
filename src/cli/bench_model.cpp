// myriad bench-model: the engine alone, no HTTP. Prefill and decode speed at several batch
// sizes, with the bytes each decode step must read and the machine's measured copy bandwidth as
// the speed of light.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    std::string model;
    std::string batches = "1,4,16";
    int64_t prompt_len = 128;
    int64_t decode_steps = 32;
    int tp = 1;
    int threads = 0;
    bool json = false;
};

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Bytes per second of a large memory copy (read + write counted), best of three.
double copy_bandwidth() {
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

// A step of `batch` sequences, each adding `len` tokens after `past`, sequence s in blocks
// [s * blocks_per_seq, ...).
StepInput batch_step(int64_t batch, int64_t len, int64_t past, int64_t block_size,
                     int64_t blocks_per_seq, std::mt19937& rng, int64_t vocab) {
    StepInput st;
    for (int64_t s = 0; s < batch; ++s) {
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
        }
        st.logit_rows.push_back(static_cast<int32_t>(seq.q_begin + len - 1));
        st.seqs.push_back(std::move(seq));
    }
    return st;
}

int run_bench(const BenchArgs& a) {
    std::vector<int64_t> batches;
    {
        std::stringstream ss(a.batches);
        std::string item;
        while (std::getline(ss, item, ',')) {
            try {
                batches.push_back(std::stoll(item));
            } catch (...) {
                bad_input("--batch: '{}' is not a number", item);
            }
            if (batches.back() < 1) bad_input("--batch: {} must be at least 1", batches.back());
        }
    }
    if (a.prompt_len < 1 || a.decode_steps < 1)
        bad_input("--prompt-len and --decode-steps must be at least 1");
    const std::string dir = resolve_model(a.model);
    ModelConfig c = load_model_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);
    const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
    WorkerGroupOptions wo;
    wo.tp = a.tp;
    wo.threads = a.threads;
    const int64_t per_seq = a.prompt_len + a.decode_steps;
    const int64_t blocks_per_seq = (per_seq + wo.kv_block_size - 1) / wo.kv_block_size;
    wo.kv_blocks = blocks_per_seq * max_batch;
    WorkerGroup workers(c, ckpt, wo);

    // Bytes of weights (F32 on the CPU backend) a decode step reads: everything but the routed
    // experts, plus at most min(E, batch * k) experts per MoE layer.
    int64_t dense_bytes = 0, expert_bytes = 0;
    for (const auto& t : expected_tensors(c)) {
        int64_t b = shard_bytes(t.shape, ShardKind::Replicated, 4, 1);
        (t.name.find(".mlp.experts.") != std::string::npos ? expert_bytes : dense_bytes) += b;
    }
    if (dense_bytes > 0) dense_bytes -= c.vocab_size * c.hidden_size * 4;  // embedding: one row
    const double bandwidth = copy_bandwidth();

    std::mt19937 rng(1);
    std::vector<float> logits(static_cast<size_t>(max_batch * c.vocab_size));
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    if (!a.json)
        std::printf("%-6s %12s %12s %12s %14s %10s\n", "batch", "prefill t/s", "decode t/s",
                    "step ms", "weights GB/s", "of copy");
    for (int64_t batch : batches) {
        // Warm-up: one small step.
        StepInput warm = batch_step(1, 4, 0, wo.kv_block_size, blocks_per_seq, rng, c.vocab_size);
        workers.step(warm, logits.data());
        auto t0 = Clock::now();
        StepInput pre = batch_step(batch, a.prompt_len, 0, wo.kv_block_size, blocks_per_seq, rng,
                                   c.vocab_size);
        workers.step(pre, logits.data());
        const double prefill_s = seconds_since(t0);
        auto t1 = Clock::now();
        for (int64_t i = 0; i < a.decode_steps; ++i) {
            StepInput st = batch_step(batch, 1, a.prompt_len + i, wo.kv_block_size, blocks_per_seq,
                                      rng, c.vocab_size);
            workers.step(st, logits.data());
        }
        const double decode_s = seconds_since(t1);
        const double step_s = decode_s / a.decode_steps;
        const int64_t experts_read = std::min<int64_t>(c.n_routed_experts, batch * c.num_experts_per_tok);
        const double step_bytes = dense_bytes + (c.n_routed_experts > 0
                                                     ? double(expert_bytes) * experts_read / c.n_routed_experts
                                                     : 0.0);
        const double prefill_tps = batch * a.prompt_len / prefill_s;
        const double decode_tps = batch / step_s;
        const double gbs = step_bytes / step_s / 1e9;
        results.push_back({{"batch", batch},
                           {"prompt_len", a.prompt_len},
                           {"prefill_tok_s", prefill_tps},
                           {"decode_tok_s", decode_tps},
                           {"decode_step_ms", step_s * 1e3},
                           {"decode_weight_bytes_per_step", step_bytes},
                           {"decode_weight_gb_s", gbs},
                           {"copy_gb_s", bandwidth / 1e9}});
        if (!a.json)
            std::printf("%-6lld %12.1f %12.1f %12.3f %14.2f %9.1f%%\n", (long long)batch,
                        prefill_tps, decode_tps, step_s * 1e3, gbs, 100.0 * gbs * 1e9 / bandwidth);
    }
    if (a.json) {
        nlohmann::ordered_json out = {{"model", dir},  {"tp", a.tp},
                                      {"threads", workers.options().threads},
                                      {"device", "cpu"}, {"results", results}};
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::printf("model %s, tp %d, %d threads, memcpy %.1f GB/s (read + write)\n", dir.c_str(),
                    a.tp, workers.options().threads, bandwidth / 1e9);
    }
    return 0;
}

}  // namespace

Run add_bench_model(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--batch", a->batches, "comma-separated batch sizes (default 1,4,16)");
    app.add_option("--prompt-len", a->prompt_len, "prompt tokens per sequence (default 128)");
    app.add_option("--decode-steps", a->decode_steps, "decode steps timed (default 32)");
    app.add_option("--tp", a->tp, "tensor-parallel ranks (default 1)");
    app.add_option("--threads", a->threads, "CPU threads in all (default: all cores)");
    app.add_flag("--json", a->json, "print results as JSON");
    return [a] { return run_bench(*a); };
}

}  // namespace myriad::cli
