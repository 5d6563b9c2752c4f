// Speculative decoding on the CUDA backend: greedy output with drafts (ngram, EAGLE3, and a replay
// drafter whose drafts are partly wrong) equals the output without, on every golden checkpoint
// — token for token up to the first near-tie of the plain run (verification rows are computed by
// other kernels than decode rows: the absorbed attention over several rows of a sequence,
// replayed from a graph only where every sequence of the step brings the same draft length, so a
// near-tie may flip). In exact mode (F32 activations) a near-tie is a top-2
// margin below 1e-3, as the issue states; in the default BF16 mode the logits move by about 1e-2
// of their size between kernels (differential_test.cpp measures it), so there a near-tie is a
// margin below 1e-2 of the row's largest |logit|. Mixed batches:
// some sequences speculate, some do not, some prefill (a small token budget), with the prefix
// cache on; the device samples (one GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "engine/engine.h"
#include "golden_reference.h"
#include "gpu_test_util.h"
#include "model_runner.h"
#include "ops/cuda/cuda_ops.h"
#include "sampling_runs.h"

namespace myriad::testing {
namespace {

struct Greedy {
    std::vector<std::vector<TokenId>> tokens;
    // Per request: the top-2 margin of the logits each token was chosen from.
    std::vector<std::vector<float>> margins;
    EngineStats stats;
};

Greedy run(WorkerGroup& workers, const std::vector<std::vector<TokenId>>& prompts,
           const std::vector<int64_t>& max_tokens, std::shared_ptr<Drafter> drafter,
           SpeculativeMethod method, int64_t k, bool relative, int64_t budget = 24,
           const std::string& draft = "") {
    auto margins = std::make_shared<std::map<std::pair<uint64_t, int64_t>, float>>();
    const int64_t vocab = workers.config().vocab_size;
    EngineConfig ec;
    ec.check_invariants = true;
    ec.scheduler.max_num_batched_tokens = budget;
    ec.speculative.method = method;
    ec.speculative.num_speculative_tokens = k;
    ec.speculative.draft_model = draft;
    ec.drafter = std::move(drafter);
    // MYRIAD_TEST_REST=N: sequences rest from drafting after N whole misses (SpeculativeConfig::
    // rest_after_misses, off by default; with 2 the v2lite BF16 case fails: drafter.h).
    if (const char* r = std::getenv("MYRIAD_TEST_REST"))
        ec.speculative.rest_after_misses = std::atoi(r);
    // The plain run's margins (its rows then come back to the host); the speculating runs
    // sample on the device.
    if (!ec.drafter && method == SpeculativeMethod::None)
        ec.logits_observer = [margins, vocab, relative](uint64_t id, int64_t pos, const float* l) {
            std::vector<float> v(l, l + vocab);
            float biggest = 0;
            for (float x : v) biggest = std::max(biggest, std::abs(x));
            std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<>());
            (*margins)[{id, pos}] = relative && biggest > 0 ? (v[0] - v[1]) / biggest : v[0] - v[1];
        };
    Engine engine(workers, ec);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (size_t i = 0; i < prompts.size(); ++i) {
        SamplingParams p;
        p.temperature = 0;
        p.max_tokens = max_tokens[i];
        p.ignore_eos = true;
        handles.push_back(engine.submit(prompts[i], p));
    }
    engine.run_until_idle();
    Greedy g;
    for (size_t i = 0; i < handles.size(); ++i) {
        g.tokens.emplace_back();
        RequestOutput o;
        while (handles[i]->try_next(o))
            g.tokens.back().insert(g.tokens.back().end(), o.tokens.begin(), o.tokens.end());
        g.margins.emplace_back();
        const int64_t t = static_cast<int64_t>(prompts[i].size());
        for (size_t j = 0; j < g.tokens.back().size(); ++j) {
            auto it = margins->find({handles[i]->id(), t - 1 + static_cast<int64_t>(j)});
            g.margins.back().push_back(it == margins->end() ? 0.0f : it->second);
        }
    }
    g.stats = engine.stats();
    EXPECT_EQ(engine.block_manager().num_used(), 0);
    return g;
}

class GpuSpeculative : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(GpuSpeculative, GreedyOutputUnchangedUpToANearTie) {
    const auto& [name, exact] = GetParam();
    KernelOverrides mode(exact ? "exact=1" : "exact=0");
    const float near_tie = exact ? 1e-3f : 1e-2f;  // absolute in exact mode, else relative
    const std::string dir = golden_dir(name);
    LoadedModel m;
    m.config = load_model_config(dir);
    m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.kv_blocks = 256;
    wo.device = Device::Cuda;
    m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
    ASSERT_TRUE(m.workers->backend_samples());
    auto ref = load_golden_reference(name);
    std::vector<std::vector<TokenId>> prompts;
    std::vector<int64_t> max_tokens;
    for (const auto& p : ref.p) {
        prompts.push_back(p.ids);
        max_tokens.push_back(40);
        std::vector<TokenId> rep;
        for (int i = 0; i < 6; ++i) rep.insert(rep.end(), p.ids.begin(), p.ids.begin() + 5);
        prompts.push_back(rep);
        max_tokens.push_back(48);
    }
    prompts.push_back(ref.p[0].ids);  // from the prefix cache
    max_tokens.push_back(11);
    const Greedy plain =
        run(*m.workers, prompts, max_tokens, nullptr, SpeculativeMethod::None, 3, !exact);
    for (int64_t k : {2, 5}) {
        for (int with_replay = 0; with_replay < 2; ++with_replay) {
            SCOPED_TRACE(::testing::Message()
                         << "draft length " << k << (with_replay ? ", replay" : ", ngram"));
            auto drafter = with_replay
                               ? std::make_shared<ReplayDrafter>(plain.tokens, m.config.vocab_size)
                               : nullptr;
            const Greedy g =
                run(*m.workers, prompts, max_tokens, drafter,
                    with_replay ? SpeculativeMethod::None : SpeculativeMethod::Ngram, k, !exact);
            EXPECT_GT(g.stats.spec_draft_tokens, 0);
            if (with_replay) {
                EXPECT_GT(g.stats.spec_accepted_tokens, 0);
                EXPECT_LT(g.stats.spec_accepted_tokens, g.stats.spec_draft_tokens);
            }
            for (size_t i = 0; i < prompts.size(); ++i) {
                SCOPED_TRACE(::testing::Message() << "request " << i);
                ASSERT_EQ(g.tokens[i].size(), plain.tokens[i].size());
                for (size_t j = 0; j < plain.tokens[i].size(); ++j) {
                    if (plain.margins[i][j] < near_tie) break;  // may go either way
                    ASSERT_EQ(g.tokens[i][j], plain.tokens[i][j])
                        << "token " << j << ", plain margin " << plain.margins[i][j];
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, GpuSpeculative,
    ::testing::Combine(::testing::ValuesIn(std::vector<std::string>(std::begin(kGoldenModels),
                                                                    std::end(kGoldenModels))),
                       ::testing::Bool()),
    [](const auto& info) {
        return std::get<0>(info.param) + (std::get<1>(info.param) ? "_exact" : "_bf16");
    });

// One sequence at a time (every decode step the same shape: its last token and its draft), CUDA
// graphs on: verification steps replay the graph of their draft length (counted), and the greedy
// tokens are the plain run's up to a near-tie (default BF16 mode: 1e-2 of the row's largest
// |logit|).
// EAGLE3 on the CUDA backend (the draft layer runs on the host; the target's steps, which then
// copy the chosen layers' inputs back, run op by op): with each golden draft of moonlight_plain,
// greedy output equals the output without, up to a near-tie of the plain run, and drafts are made.
TEST(GpuEagle3, GreedyOutputUnchangedUpToANearTie) {
    const std::string dir = golden_dir("moonlight_plain");
    for (bool exact : {true, false}) {
        SCOPED_TRACE(exact ? "exact" : "default");
        KernelOverrides mode(exact ? "exact=1" : "exact=0");
        const float near_tie = exact ? 1e-3f : 1e-2f;
        LoadedModel m;
        m.config = load_model_config(dir);
        m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
        WorkerGroupOptions wo;
        wo.kv_blocks = 256;
        wo.device = Device::Cuda;
        m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
        auto ref = load_golden_reference("moonlight_plain");
        std::vector<std::vector<TokenId>> prompts;
        std::vector<int64_t> max_tokens;
        for (const auto& p : ref.p) {
            prompts.push_back(p.ids);
            max_tokens.push_back(30);
        }
        prompts.push_back(ref.p[0].ids);  // from the prefix cache
        max_tokens.push_back(11);
        const Greedy plain =
            run(*m.workers, prompts, max_tokens, nullptr, SpeculativeMethod::None, 3, !exact);
        for (const char* draft : {"moonlight_a", "moonlight_b"})
            for (int64_t k : {1, 3}) {
                SCOPED_TRACE(::testing::Message() << draft << ", draft length " << k);
                const Greedy g =
                    run(*m.workers, prompts, max_tokens, nullptr, SpeculativeMethod::Eagle3, k,
                        !exact, 24, eagle3_golden_dir(draft));
                EXPECT_GT(g.stats.spec_draft_tokens, 0);
                for (size_t i = 0; i < prompts.size(); ++i) {
                    SCOPED_TRACE(::testing::Message() << "request " << i);
                    ASSERT_EQ(g.tokens[i].size(), plain.tokens[i].size());
                    for (size_t j = 0; j < plain.tokens[i].size(); ++j) {
                        if (plain.margins[i][j] < near_tie) break;  // may go either way
                        ASSERT_EQ(g.tokens[i][j], plain.tokens[i][j])
                            << "token " << j << ", plain margin " << plain.margins[i][j];
                    }
                }
            }
    }
}

class GpuSpeculativeGraphs : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuSpeculativeGraphs, VerificationStepsReplayGraphs) {
    const std::string dir = golden_dir(GetParam());
    LoadedModel m;
    m.config = load_model_config(dir);
    m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.kv_blocks = 256;
    wo.device = Device::Cuda;
    m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
    auto ref = load_golden_reference(GetParam());
    std::vector<TokenId> rep;
    for (int i = 0; i < 8; ++i)
        rep.insert(rep.end(), ref.p[0].ids.begin(), ref.p[0].ids.begin() + 6);
    const std::vector<std::vector<TokenId>> prompts{rep};
    const std::vector<int64_t> max_tokens{80};
    const Greedy plain =
        run(*m.workers, prompts, max_tokens, nullptr, SpeculativeMethod::None, 3, true, 2048);
    const int64_t before = cuda::graph_verify_replays_total();
    const Greedy g =
        run(*m.workers, prompts, max_tokens, nullptr, SpeculativeMethod::Ngram, 3, true, 2048);
    const int64_t replays = cuda::graph_verify_replays_total() - before;
    std::printf("%s: %lld verification steps replayed, %lld of %lld draft tokens accepted\n",
                GetParam().c_str(), (long long)replays, (long long)g.stats.spec_accepted_tokens,
                (long long)g.stats.spec_draft_tokens);
    EXPECT_GT(g.stats.spec_draft_tokens, 0);
    // Replays where graphs are on (gpu_run.sh's second pass sets graphs=0: op by op throughout).
    if (test_kernel_choices().graphs) {
        EXPECT_GT(replays, 0);
    } else {
        EXPECT_EQ(replays, 0);
    }
    ASSERT_EQ(g.tokens[0].size(), plain.tokens[0].size());
    for (size_t j = 0; j < plain.tokens[0].size(); ++j) {
        if (plain.margins[0][j] < 1e-2f) break;  // a near-tie: may go either way
        ASSERT_EQ(g.tokens[0][j], plain.tokens[0][j]) << "token " << j;
    }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GpuSpeculativeGraphs,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(kGoldenModels),
                                                                      std::end(kGoldenModels))));

}  // namespace
}  // namespace myriad::testing
