// The prefix cache on the GPU at each tensor-parallel size, ranks on one GPU: a repeated golden
// prompt (its full blocks served from the cache, the rest prefilled against them) gives the cold
// run's greedy tokens and logprobs (against transformers the differential tests hold the cold run:
// kimi_k2's prompt 0 has a routing near-tie at its eighth token, 7.2e-05, that the GPU may flip).
// The same engine, so the repeat also shows a step that is not deterministic across ranks (a
// collective reading a peer's buffer before it is written).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "format/checkpoint.h"
#include "golden_reference.h"
#include "gpu_test_util.h"
#include "model/model_config.h"

namespace myriad::testing {
namespace {

struct Run {
    std::vector<TokenId> tokens;
    std::vector<float> logprobs;  // the chosen token's, then the top 2's, per token
    int64_t cached = 0;
};

Run drain(RequestHandle& h) {
    Run r;
    RequestOutput o;
    while (h.try_next(o)) {
        r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
        for (const SampleResult& s : o.logprobs) {
            r.logprobs.push_back(s.logprob);
            for (const TokenLogprob& t : s.top) r.logprobs.push_back(t.logprob);
        }
        if (o.finished) r.cached = o.cached_tokens;
    }
    return r;
}

void check_repeat(const std::string& golden, int tp, bool exact) {
    SCOPED_TRACE(golden + " TP " + std::to_string(tp) + (exact ? " exact" : " default"));
    KernelOverrides mode(exact ? "exact=1" : "exact=0");
    const GoldenReference ref = load_golden_reference(golden);
    const std::string dir = golden_dir(golden);
    const ModelConfig config = load_model_config(dir);
    Checkpoint checkpoint = Checkpoint::open(dir);
    WorkerGroupOptions wo;
    wo.threads = 1;
    wo.kv_blocks = 64;
    wo.device = Device::Cuda;
    wo.tp = tp;
    wo.devices.assign(tp, 0);
    WorkerGroup workers(config, checkpoint, wo);
    EngineConfig ec;
    ec.check_invariants = true;
    Engine engine(workers, ec);
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 9;
    p.ignore_eos = true;
    p.top_logprobs = 2;
    const std::vector<TokenId>& prompt = ref.p[0].ids;
    std::vector<Run> runs;
    for (int i = 0; i < 3; ++i) {
        auto h = engine.submit(prompt, p);
        engine.run_until_idle();
        runs.push_back(drain(*h));
    }
    const int64_t bs = workers.options().kv_block_size;
    const int64_t t = static_cast<int64_t>(prompt.size());
    EXPECT_EQ(runs[0].cached, 0);
    for (int i = 1; i < 3; ++i) {
        SCOPED_TRACE("repeat " + std::to_string(i));
        EXPECT_EQ(runs[i].cached, (t - 1) / bs * bs);
        EXPECT_EQ(runs[i].tokens, runs[0].tokens);
        ASSERT_EQ(runs[i].logprobs.size(), runs[0].logprobs.size());
        double worst = 0;
        for (size_t k = 0; k < runs[0].logprobs.size(); ++k)
            worst = std::max(worst, double(std::fabs(runs[i].logprobs[k] - runs[0].logprobs[k])));
        // A cached prefix changes which rows share a prefill product, not the sums' precision.
        EXPECT_LE(worst, exact ? 2e-3 : 3e-2);
    }
}

TEST(GpuPrefixCache, RepeatedPromptGivesTheColdRunAtEachTpOnOneGpu) {
    const std::vector<std::pair<std::string, std::vector<int>>> cases = {{"kimi_k2", {1, 2}},
                                                                         {"tp8_bf16", {1, 2, 8}}};
    for (const auto& [golden, tps] : cases)
        for (int tp : tps)
            for (bool exact : {true, false}) check_repeat(golden, tp, exact);
}

}  // namespace
}  // namespace myriad::testing
