// Prompt logprobs on the GPU: the device's log-softmax and top-N (CudaOps::logprob_rows) against
// the host reference (ops/logprob_rows.h) on random logits of a small and the full Kimi
// vocabulary, one slice and the slices of tensor-parallel ranks; and whole engines on a golden
// checkpoint, CUDA against the CPU, for one prefill, chunked prefill and a cached prefix.
//
// Thresholds of the engine comparison follow model_test.cpp: in exact mode (F32 activations) the
// logits stay within 2e-2 norm-wise of the CPU's, so each logprob must be within a tenth of the
// row's RMS logit; in default mode (BF16-rounded prefill GEMMs, where a router near-tie flips an
// expert) 85% of positions must.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/engine.h"
#include "golden_reference.h"
#include "gpu_test_util.h"
#include "model_runner.h"
#include "ops/backend.h"
#include "ops/logprob_rows.h"

namespace myriad::testing {
namespace {

TEST_F(GpuOpsTest, LogprobRowsMatchTheHost) {
    struct Shape {
        int64_t vocab, slices, rows;
    };
    for (const Shape sh :
         {Shape{3000, 1, 70}, Shape{3001, 2, 33}, Shape{163840, 1, 12}, Shape{163840, 8, 5}}) {
        const int64_t shard = (sh.vocab + sh.slices - 1) / sh.slices;  // the last slice padded
        SCOPED_TRACE(::testing::Message() << "vocab " << sh.vocab << " in " << sh.slices
                                          << " slices, " << sh.rows << " rows");
        std::vector<float> logits = randn(sh.slices * sh.rows * shard, 3.0f);
        for (size_t i = 0; i + 1 < logits.size(); i += 5) logits[i] = logits[i + 1];  // ties
        std::vector<TokenId> targets(static_cast<size_t>(sh.rows));
        for (auto& t : targets) t = static_cast<TokenId>(rng() % sh.vocab);
        Tensor d = dev(logits, {sh.slices, sh.rows, shard});
        for (int64_t top_n : {int64_t{0}, int64_t{1}, kMaxTopLogprobs}) {
            SCOPED_TRACE(::testing::Message() << "top " << top_n);
            const size_t cells = static_cast<size_t>(sh.rows * top_n);
            std::vector<float> want_t(sh.rows), got_t(sh.rows, NAN), want_v(cells), got_v(cells);
            std::vector<TokenId> want_i(cells), got_i(cells, -7);
            logprob_rows_host(logits.data(), sh.slices, sh.rows, shard, sh.vocab, targets.data(),
                              top_n, want_t.data(), want_i.data(), want_v.data());
            gpu->logprob_rows(d, sh.vocab, targets.data(), top_n, got_t.data(), got_i.data(),
                              got_v.data());
            for (int64_t r = 0; r < sh.rows; ++r)
                EXPECT_NEAR(got_t[r], want_t[r], 1e-4) << "row " << r;
            EXPECT_EQ(got_i, want_i);
            for (size_t j = 0; j < cells; ++j) EXPECT_NEAR(got_v[j], want_v[j], 1e-4) << j;
        }
    }
}

std::unique_ptr<LoadedModel> load_on(const std::string& dir, Device device) {
    auto m = std::make_unique<LoadedModel>();
    m->config = load_model_config(dir);
    m->checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.tp = 1;
    wo.threads = 2;
    wo.kv_blocks = 64;
    wo.kv_cache_dtype = KvCacheDtype::Fp32;
    wo.device = device;
    m->workers = std::make_unique<WorkerGroup>(m->config, *m->checkpoint, wo);
    return m;
}

struct ExactMode : KernelOverrides {
    explicit ExactMode(bool on) : KernelOverrides(on ? "exact=1" : "exact=0") {}
};

// The prompt logprobs (top 5) of `prompt` through an engine of `budget` tokens a step; with
// `cached_first`, the prompt ran once before without them (its blocks are in the prefix cache).
std::vector<SampleResult> engine_prompt_logprobs(WorkerGroup& workers,
                                                 const std::vector<TokenId>& prompt, int64_t budget,
                                                 bool cached_first) {
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = budget;
    Engine engine(workers, ec);
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 1;
    if (cached_first) {
        auto h = engine.submit(prompt, p);
        engine.run_until_idle();
    }
    p.prompt_logprobs = 5;
    auto h = engine.submit(prompt, p);
    engine.run_until_idle();
    RequestOutput o;
    std::vector<SampleResult> got;
    while (h->try_next(o))
        if (!o.prompt_logprobs.empty()) got = o.prompt_logprobs;
    return got;
}

class GpuPromptLogprobs : public ::testing::TestWithParam<bool> {};

TEST_P(GpuPromptLogprobs, MatchCpu) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    const bool exact = GetParam();
    ExactMode mode(exact);
    const GoldenReference ref = load_golden_reference("kimi_k2");
    const std::vector<TokenId>& prompt = ref.p[0].ids;
    auto cpu = load_on(golden_dir("kimi_k2"), Device::Cpu);
    auto gpu = load_on(golden_dir("kimi_k2"), Device::Cuda);
    const int64_t vocab = cpu->config.vocab_size;
    const std::vector<float> logits = sequence_logits(*cpu->workers, prompt);
    const auto want = engine_prompt_logprobs(*cpu->workers, prompt, 4096, false);
    ASSERT_EQ(want.size(), prompt.size() - 1);
    struct Run {
        const char* what;
        int64_t budget;
        bool cached;
    };
    for (const Run run : {Run{"one prefill", 4096, false}, Run{"chunks of 13", 13, false},
                          Run{"cached prefix", 4096, true}}) {
        SCOPED_TRACE(run.what);
        const auto got = engine_prompt_logprobs(*gpu->workers, prompt, run.budget, run.cached);
        ASSERT_EQ(got.size(), want.size());
        int close = 0, clear = 0, agree = 0;
        double worst = 0;
        for (size_t k = 0; k < want.size(); ++k) {
            const float* row = logits.data() + k * vocab;
            double sq = 0;
            for (int64_t i = 0; i < vocab; ++i) sq += double(row[i]) * row[i];
            const double tol = 0.1 * std::sqrt(sq / vocab);
            EXPECT_EQ(got[k].token, prompt[k + 1]);
            const double diff = std::fabs(got[k].logprob - want[k].logprob);
            worst = std::max(worst, diff / tol);
            close += diff <= tol;
            ASSERT_EQ(got[k].top.size(), 5u);
            ASSERT_EQ(want[k].top.size(), 5u);
            if (want[k].top[0].logprob - want[k].top[1].logprob > 2 * tol) {
                ++clear;
                agree += got[k].top[0].token == want[k].top[0].token;
            }
        }
        std::printf(
            "kimi_k2 %-7s %-14s prompt logprobs: %d/%zu within a tenth of the row's RMS "
            "logit (worst %.2f of it), top-1 %d/%d clear positions agree\n",
            exact ? "exact" : "default", run.what, close, want.size(), worst, agree, clear);
        EXPECT_GT(clear, 0);
        if (exact) {
            EXPECT_EQ(close, static_cast<int>(want.size()));
            EXPECT_EQ(agree, clear);
        } else {
            EXPECT_GE(close, 0.85 * want.size());
            EXPECT_GE(agree, 0.95 * clear);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuPromptLogprobs, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "exact" : "default"; });

}  // namespace
}  // namespace myriad::testing
