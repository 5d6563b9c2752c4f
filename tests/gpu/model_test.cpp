// Whole models on the GPU against the CPU backend on the golden checkpoints (BF16 and the
// quantised FP8-block, NVFP4 and INT4 ones), for prefill, chunked prefill, decode and a mixed
// batch (decode rows and a prefill chunk in one step).
//
// Exact mode (MYRIAD_KERNELS=exact=1, F32 activations in every linear): logits within 2e-2
// norm-wise at every position and the same greedy token wherever the CPU's top-2 margin is
// clear. Default mode (prefill GEMMs on BF16-rounded activations): the tiny random goldens have
// routers with near-ties, where a rounding flips an expert; that position's logits move far and,
// through attention, so do later positions of its prompt (seen on an H200: 157 of 178 positions
// within 2e-2 for v3_grouped_yarn and kimi_k2, all 178 in exact mode). So here 85% of positions
// must stay within 2e-2 and greedy tokens agree at 95% of clear positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "golden_reference.h"
#include "gpu_test_util.h"
#include "model_runner.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_ops.h"

namespace myriad::testing {
namespace {

constexpr double kLogitTol = 2e-2;

std::unique_ptr<LoadedModel> load_on(const std::string& dir, Device device, KvCacheDtype kv) {
    auto m = std::make_unique<LoadedModel>();
    m->config = load_model_config(dir);
    m->checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.tp = 1;
    wo.threads = 2;
    wo.kv_blocks = 64;
    wo.kv_cache_dtype = kv;
    wo.device = device;
    m->workers = std::make_unique<WorkerGroup>(m->config, *m->checkpoint, wo);
    return m;
}

struct Compare {
    double worst_rel = 0.0;
    int rows = 0, close = 0, clear = 0, agree = 0;
};

// Exact mode for the backends created in its scope (MYRIAD_KERNELS).
struct ExactMode : KernelOverrides {
    explicit ExactMode(bool on) : KernelOverrides(on ? "exact=1" : "exact=0") {}
};

// Per row: ‖gpu − cpu‖ / ‖cpu‖, and the argmax where the CPU's top two differ by more than 1%
// of the row's range.
void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, int64_t vocab,
             Compare& c) {
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t r = 0; r < cpu.size() / vocab; ++r) {
        const float* g = gpu.data() + r * vocab;
        const float* p = cpu.data() + r * vocab;
        double diff = 0, ref = 0;
        for (int64_t i = 0; i < vocab; ++i) {
            diff += double(g[i] - p[i]) * (g[i] - p[i]);
            ref += double(p[i]) * p[i];
        }
        const double rel = std::isfinite(diff) ? std::sqrt(diff / std::max(ref, 1e-30)) : INFINITY;
        c.worst_rel = std::max(c.worst_rel, rel);
        ++c.rows;
        c.close += rel <= kLogitTol;
        const int64_t best = std::max_element(p, p + vocab) - p;
        float second = -INFINITY;
        for (int64_t i = 0; i < vocab; ++i)
            if (i != best) second = std::max(second, p[i]);
        const float range = p[best] - *std::min_element(p, p + vocab);
        if (p[best] - second > 0.01f * range) {
            ++c.clear;
            c.agree += (std::max_element(g, g + vocab) - g) == best;
        }
    }
}

// Prefill (one step and chunks of 7), then decode token by token, on both backends.
void check_model(const std::string& dir, const std::vector<int32_t>& prompt,
                 const std::vector<int32_t>& decode, KvCacheDtype kv, bool exact) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    ExactMode mode(exact);
    auto cpu = load_on(dir, Device::Cpu, kv);
    auto gpu = load_on(dir, Device::Cuda, kv);
    const int64_t vocab = cpu->config.vocab_size;
    const int64_t past = static_cast<int64_t>(prompt.size());
    Compare c;
    for (int64_t chunk : {int64_t{0}, int64_t{7}}) {
        auto ref = sequence_logits(*cpu->workers, prompt, 0, chunk);
        auto got = sequence_logits(*gpu->workers, prompt, 0, chunk);
        compare(got, ref, vocab, c);
        auto dref = sequence_logits(*cpu->workers, decode, past, 1);
        auto dgot = sequence_logits(*gpu->workers, decode, past, 1);
        compare(dgot, dref, vocab, c);
    }
    // A mixed step: sequence A (the prompt, cached above) decodes one token while sequence B
    // prefills the prompt again in fresh blocks.
    StepInput st;
    const int64_t bs = cpu->workers->options().kv_block_size;
    SeqSlice a;
    a.q_begin = 0;
    a.q_len = 1;
    a.ctx_len = past + static_cast<int64_t>(decode.size()) + 1;
    for (int64_t b = 0; b * bs < a.ctx_len; ++b) a.block_table.push_back(static_cast<BlockId>(b));
    st.token_ids.push_back(decode.back());
    st.positions.push_back(static_cast<int32_t>(a.ctx_len - 1));
    st.slots.push_back(a.ctx_len - 1);
    SeqSlice b;
    b.q_begin = 1;
    b.q_len = past;
    b.ctx_len = past;
    const int64_t b0 = 32;  // blocks 32.. hold sequence B
    for (int64_t i = 0; i * bs < past; ++i) b.block_table.push_back(static_cast<BlockId>(b0 + i));
    for (int64_t i = 0; i < past; ++i) {
        st.token_ids.push_back(prompt[i]);
        st.positions.push_back(static_cast<int32_t>(i));
        st.slots.push_back(b0 * bs + i);
    }
    st.seqs = {a, b};
    st.logit_rows = {0, static_cast<int32_t>(past)};
    std::vector<float> mref(2 * vocab), mgot(2 * vocab);
    cpu->workers->step(st, mref.data());
    gpu->workers->step(st, mgot.data());
    compare(mgot, mref, vocab, c);

    std::printf(
        "%-20s %-7s kv %-4s worst ‖gpu−cpu‖/‖cpu‖ %.2e, %d/%d rows within %.0e, greedy %d/%d "
        "clear positions agree\n",
        dir.substr(dir.rfind('/') + 1).c_str(), exact ? "exact" : "default",
        std::string(kv_cache_dtype_name(kv)).c_str(), c.worst_rel, c.close, c.rows, kLogitTol,
        c.agree, c.clear);
    EXPECT_GT(c.clear, 0);
    if (exact) {
        EXPECT_LE(c.worst_rel, kLogitTol);
        EXPECT_EQ(c.agree, c.clear);
    } else {
        EXPECT_GE(c.close, 0.85 * c.rows);
        EXPECT_GE(c.agree, 0.95 * c.clear);
    }
}

class GpuGolden : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(GpuGolden, MatchesCpu) {
    const auto [name, exact] = GetParam();
    GoldenReference ref = load_golden_reference(name);
    std::vector<int32_t> dec(ref.p[0].generated.begin(), ref.p[0].generated.begin() + 8);
    check_model(golden_dir(name), ref.p[0].ids, dec, KvCacheDtype::Fp32, exact);
}

INSTANTIATE_TEST_SUITE_P(Goldens, GpuGolden,
                         ::testing::Combine(::testing::ValuesIn(kGoldenModels), ::testing::Bool()));

class GpuQuantGolden : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(GpuQuantGolden, MatchesCpu) {
    const auto [name, exact] = GetParam();
    const std::string dir = std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_quant/" + name;
    GoldenReference ref = load_reference_in(dir);
    std::vector<int32_t> dec(ref.p[0].generated.begin(), ref.p[0].generated.begin() + 8);
    check_model(dir, ref.p[0].ids, dec, KvCacheDtype::Fp32, exact);
}

INSTANTIATE_TEST_SUITE_P(Quant, GpuQuantGolden,
                         ::testing::Combine(::testing::Values("nvfp4_experts", "nvfp4_all_linear",
                                                              "fp8_block", "int4_kimi"),
                                            ::testing::Bool()));

// The compact latent caches, BF16 and FP8 e4m3, on both backends.
TEST(GpuKvCache, Bf16AndFp8CachesStayClose) {
    GoldenReference ref = load_golden_reference("v3_grouped_yarn");
    std::vector<int32_t> dec(ref.p[0].generated.begin(), ref.p[0].generated.begin() + 8);
    check_model(golden_dir("v3_grouped_yarn"), ref.p[0].ids, dec, KvCacheDtype::Bf16, true);
    check_model(golden_dir("v3_grouped_yarn"), ref.p[0].ids, dec, KvCacheDtype::Fp8, true);
}

// Graphs on or off for the backends created in its scope (MYRIAD_KERNELS).
struct GraphMode : KernelOverrides {
    explicit GraphMode(bool on) : KernelOverrides(on ? "graphs=1" : "graphs=0") {}
};

// Batched decode of 4 sequences with CUDA graphs on and off, both against the CPU: step i gives
// every sequence rows_per_step[i] rows (1: plain decode; r > 1: its last token and a draft of
// r - 1, every row's logits, as a speculative verification step), the context growing across
// blocks. With graphs on, a shape's steps after its second replay the graph captured for it (one
// per rows a sequence) on new inputs, and must give the CPU's logits like the op-by-op run.
void graphs_match_cpu(const std::vector<int64_t>& rows_per_step) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    ExactMode exact(true);
    const std::string dir = std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_quant/nvfp4_experts";
    GoldenReference ref = load_reference_in(dir);
    const std::vector<int32_t>& prompt = ref.p[0].ids;
    auto cpu = load_on(dir, Device::Cpu, KvCacheDtype::Bf16);
    const int64_t vocab = cpu->config.vocab_size, bs = cpu->workers->options().kv_block_size;
    const int64_t seqs = 4, per_seq = 6;  // sequence s uses blocks [6s, 6s + 6)
    const int64_t past = std::min<int64_t>(static_cast<int64_t>(prompt.size()) - seqs, 40);
    int64_t added = 0, max_rows = 0;
    std::map<int64_t, int64_t> shapes;  // rows a sequence -> steps of that shape
    for (int64_t r : rows_per_step) {
        added += r;
        max_rows = std::max(max_rows, r);
        ++shapes[r];
    }
    ASSERT_GT(past, 0);
    ASSERT_LE(past + added, per_seq * bs);
    auto prefill = [&](int64_t s) {  // sequence s: the prompt from token s, `past` tokens
        StepInput st;
        SeqSlice q;
        q.q_begin = 0;
        q.q_len = past;
        q.ctx_len = past;
        for (int64_t b = 0; b * bs < past; ++b)
            q.block_table.push_back(static_cast<BlockId>(s * per_seq + b));
        for (int64_t i = 0; i < past; ++i) {
            st.token_ids.push_back(prompt[static_cast<size_t>(i + s)]);
            st.positions.push_back(static_cast<int32_t>(i));
            st.slots.push_back(s * per_seq * bs + i);
        }
        st.logit_rows = {static_cast<int32_t>(past - 1)};
        st.seqs = {q};
        return st;
    };
    auto decode = [&](int64_t step, int64_t from, int64_t r) {  // positions [from, from + r)
        StepInput st;
        for (int64_t s = 0; s < seqs; ++s) {
            SeqSlice q;
            q.q_begin = s * r;
            q.q_len = r;
            q.draft = r - 1;
            q.ctx_len = from + r;
            for (int64_t b = 0; b * bs < q.ctx_len; ++b)
                q.block_table.push_back(static_cast<BlockId>(s * per_seq + b));
            for (int64_t i = 0; i < r; ++i) {
                st.token_ids.push_back(prompt[static_cast<size_t>((s * 7 + step * 3 + i) % past)]);
                st.positions.push_back(static_cast<int32_t>(from + i));
                st.slots.push_back(s * per_seq * bs + from + i);
                st.logit_rows.push_back(static_cast<int32_t>(s * r + i));
            }
            st.seqs.push_back(q);
        }
        return st;
    };
    auto run = [&](WorkerGroup& w) {
        std::vector<float> out, logits(static_cast<size_t>(seqs * max_rows * vocab));
        for (int64_t s = 0; s < seqs; ++s) w.step(prefill(s), logits.data());
        int64_t from = past;
        for (size_t i = 0; i < rows_per_step.size(); ++i) {
            const int64_t r = rows_per_step[i];
            w.step(decode(static_cast<int64_t>(i), from, r), logits.data());
            out.insert(out.end(), logits.begin(), logits.begin() + seqs * r * vocab);
            from += r;
        }
        return out;
    };
    int64_t want_replays = 0, want_verify = 0;
    for (auto [r, n] : shapes) {
        want_replays += std::max<int64_t>(0, n - 2);
        if (r > 1) want_verify += std::max<int64_t>(0, n - 2);
    }
    const std::vector<float> want = run(*cpu->workers);
    for (bool graphs : {true, false}) {
        GraphMode mode(graphs);
        auto gpu = load_on(dir, Device::Cuda, KvCacheDtype::Bf16);
        const int64_t before = cuda::graph_replays_total();
        const int64_t verify_before = cuda::graph_verify_replays_total();
        std::vector<float> got = run(*gpu->workers);
        const int64_t replays = cuda::graph_replays_total() - before;
        const int64_t verify = cuda::graph_verify_replays_total() - verify_before;
        Compare c;
        compare(got, want, vocab, c);
        std::printf(
            "graphs %-3s: %lld replays (%lld verifying drafts), worst ‖gpu−cpu‖/‖cpu‖ %.2e over "
            "%d rows\n",
            graphs ? "on" : "off", (long long)replays, (long long)verify, c.worst_rel, c.rows);
        EXPECT_EQ(replays, graphs ? want_replays : 0);
        EXPECT_EQ(verify, graphs ? want_verify : 0);
        EXPECT_LE(c.worst_rel, kLogitTol);
    }
}

TEST(GpuGraphs, BatchedDecodeReplaysMatchCpu) {
    graphs_match_cpu({1, 1, 1, 1, 1, 1});
}

// Speculative verification steps: a graph per rows a sequence (drafts of 1 and 3 tokens),
// captured and replayed beside the plain decode graph, each on its own inputs.
TEST(GpuGraphs, VerificationStepsReplayMatchCpu) {
    graphs_match_cpu({1, 1, 1, 2, 2, 2, 4, 4, 4, 2, 1, 4});
}

}  // namespace
}  // namespace myriad::testing
