// The engine on the golden checkpoints: chunked prefill, several sequences in one batch,
// preemption, the prefix cache and tensor parallelism give transformers' logits and greedy
// tokens; seeds are independent of batch composition; random traffic leaves every block free.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "golden_reference.h"
#include "model_runner.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-3;

// max |a - b| / max |b| over one row.
double row_error(const float* a, const float* b, int64_t vocab) {
    double diff = 0, ref = 0;
    for (int64_t i = 0; i < vocab; ++i) {
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        ref = std::max(ref, double(std::fabs(b[i])));
    }
    return diff / ref;
}

struct Observed {
    std::map<std::pair<uint64_t, int64_t>, std::vector<float>> logits;  // (request, position)
};

struct EngineRig {
    std::unique_ptr<LoadedModel> model;
    std::unique_ptr<Engine> engine;
    std::shared_ptr<Observed> seen = std::make_shared<Observed>();
};

EngineRig make_rig(const std::string& name, int tp, int64_t kv_blocks, int64_t budget,
                   int64_t max_seqs = 64) {
    EngineRig r;
    r.model = load_model(golden_dir(name), tp, {}, kv_blocks);
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = budget;
    ec.scheduler.max_num_seqs = max_seqs;
    ec.check_invariants = true;
    const int64_t vocab = r.model->config.vocab_size;
    auto seen = r.seen;
    ec.logits_observer = [seen, vocab](uint64_t id, int64_t pos, const float* l) {
        seen->logits[{id, pos}] = std::vector<float>(l, l + vocab);
    };
    r.engine = std::make_unique<Engine>(*r.model->workers, ec);
    return r;
}

SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
}

std::vector<TokenId> drain(RequestHandle& h, RequestOutput* last = nullptr) {
    std::vector<TokenId> out;
    RequestOutput o;
    while (h.try_next(o)) {
        out.insert(out.end(), o.tokens.begin(), o.tokens.end());
        if (o.finished && last) *last = o;
    }
    return out;
}

// Checks a request that ran prompt p of the reference greedily for 9 tokens.
void expect_matches(const EngineRig& rig, uint64_t id, const GoldenPrompt& p, int64_t vocab,
                    const std::vector<TokenId>& tokens, const std::string& what) {
    const int64_t t = static_cast<int64_t>(p.ids.size());
    auto it = rig.seen->logits.find({id, t - 1});
    ASSERT_NE(it, rig.seen->logits.end()) << what;
    EXPECT_LE(row_error(it->second.data(), p.prefill.data() + (t - 1) * vocab, vocab), kTol)
        << what;
    for (int64_t i = 0; i < 8 && i + 1 < static_cast<int64_t>(tokens.size()); ++i) {
        auto d = rig.seen->logits.find({id, t + i});
        ASSERT_NE(d, rig.seen->logits.end()) << what << " decode " << i;
        EXPECT_LE(row_error(d->second.data(), p.decode.data() + i * vocab, vocab), kTol)
            << what << " decode " << i;
    }
    // The goldens were drawn so every greedy pick has a clear top-2 margin.
    EXPECT_EQ(tokens,
              std::vector<TokenId>(p.generated.begin(), p.generated.begin() + tokens.size()))
        << what;
}

class EngineGolden : public ::testing::TestWithParam<std::tuple<std::string, int>> {
  protected:
    std::string name() const { return std::get<0>(GetParam()); }
    int tp() const { return std::get<1>(GetParam()); }
};

TEST_P(EngineGolden, ChunkedPrefill) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 16);  // 16-token budget: 80 tokens in 5 chunks
    auto h = rig.engine->submit(ref.p[0].ids, greedy(9));
    rig.engine->run_until_idle();
    expect_matches(rig, h->id(), ref.p[0], ref.vocab, drain(*h), "chunked");
}

TEST_P(EngineGolden, ThreeSequencesOfDifferentLengthsInOneBatch) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 4096);
    auto h0 = rig.engine->submit(ref.p[0].ids, greedy(9));
    auto h1 = rig.engine->submit(ref.p[1].ids, greedy(9));
    std::vector<int32_t> short_prompt(ref.p[0].ids.begin(), ref.p[0].ids.begin() + 30);
    auto h2 = rig.engine->submit(short_prompt, greedy(1));
    ASSERT_TRUE(rig.engine->step());  // all three prefill in the first step
    EXPECT_EQ(rig.seen->logits.size(), 3u);
    rig.engine->run_until_idle();
    expect_matches(rig, h0->id(), ref.p[0], ref.vocab, drain(*h0), "p0");
    expect_matches(rig, h1->id(), ref.p[1], ref.vocab, drain(*h1), "p1");
    auto it = rig.seen->logits.find({h2->id(), 29});
    ASSERT_NE(it, rig.seen->logits.end());
    EXPECT_LE(row_error(it->second.data(), ref.p[0].prefill.data() + 29 * ref.vocab, ref.vocab),
              kTol);
}

TEST_P(EngineGolden, PreemptedAndResumed) {
    auto ref = load_golden_reference(name());
    // 10 blocks of 16 tokens: both prompts take 5 each; p0's first decode token needs a sixth,
    // so p1 (admitted last) gives way and is recomputed after p0 ends.
    auto rig = make_rig(name(), tp(), 10, 4096);
    auto h0 = rig.engine->submit(ref.p[0].ids, greedy(9));
    auto h1 = rig.engine->submit(ref.p[1].ids, greedy(9));
    rig.engine->run_until_idle();
    EXPECT_GT(rig.engine->stats().preemptions, 0);
    expect_matches(rig, h0->id(), ref.p[0], ref.vocab, drain(*h0), "p0");
    expect_matches(rig, h1->id(), ref.p[1], ref.vocab, drain(*h1), "p1");
    EXPECT_EQ(rig.engine->block_manager().num_used(), 0);
}

TEST_P(EngineGolden, PrefixCacheServesARepeatedPrompt) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 4096);
    auto first = rig.engine->submit(ref.p[0].ids, greedy(9));
    rig.engine->run_until_idle();
    RequestOutput last;
    auto t1 = drain(*first, &last);
    EXPECT_EQ(last.cached_tokens, 0);
    auto second = rig.engine->submit(ref.p[0].ids, greedy(9));
    rig.engine->run_until_idle();
    auto t2 = drain(*second, &last);
    EXPECT_EQ(last.cached_tokens, 64);  // 4 full blocks of 16 of the 80-token prompt
    expect_matches(rig, second->id(), ref.p[0], ref.vocab, t2, "from cache");
    EXPECT_EQ(t1, t2);
}

TEST_P(EngineGolden, PrefixCacheServesASharedPrefixThatThenDiffers) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 4096);
    const int64_t bs = rig.engine->block_manager().block_size();
    // The first request shares the golden prompt's first 50 tokens, then goes its own way; the
    // second is the golden prompt itself, so its logits have transformers' reference.
    const int64_t shared = 50;
    std::vector<int32_t> first(ref.p[0].ids.begin(), ref.p[0].ids.begin() + shared);
    first.insert(first.end(), ref.p[1].ids.begin(), ref.p[1].ids.begin() + 20);
    ASSERT_NE(first[shared], ref.p[0].ids[shared]);
    auto a = rig.engine->submit(first, greedy(3));
    rig.engine->run_until_idle();
    RequestOutput last;
    drain(*a, &last);
    EXPECT_EQ(last.cached_tokens, 0);
    auto b = rig.engine->submit(ref.p[0].ids, greedy(9));
    rig.engine->run_until_idle();
    auto tokens = drain(*b, &last);
    EXPECT_EQ(last.cached_tokens, shared / bs * bs);  // the full blocks of the shared part only
    expect_matches(rig, b->id(), ref.p[0], ref.vocab, tokens, "after a shared prefix");
}

std::vector<std::tuple<std::string, int>> params() {
    std::vector<std::tuple<std::string, int>> out;
    for (const char* m : kGoldenModels)
        for (int tp : {1, 2, 4}) out.emplace_back(m, tp);
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, EngineGolden, ::testing::ValuesIn(params()), [](const auto& info) {
    return std::get<0>(info.param) + "_tp" + std::to_string(std::get<1>(info.param));
});

TEST(EngineSeeds, SameSeedSameTokensAloneOrAmongFifteenOthers) {
    auto ref = load_golden_reference("kimi_k2");
    SamplingParams p;
    p.temperature = 1.0;
    p.top_p = 0.95;
    p.max_tokens = 24;
    p.ignore_eos = true;
    p.seed = 1234;
    std::vector<TokenId> alone;
    {
        auto rig = make_rig("kimi_k2", 1, 128, 4096);
        auto h = rig.engine->submit(ref.p[0].ids, p);
        rig.engine->run_until_idle();
        alone = drain(*h);
    }
    auto rig = make_rig("kimi_k2", 1, 128, 4096);
    std::mt19937 rng(3);
    std::vector<std::shared_ptr<RequestHandle>> others;
    for (int i = 0; i < 15; ++i) {
        std::vector<int32_t> prompt(5 + rng() % 40);
        for (auto& t : prompt) t = static_cast<int32_t>(rng() % ref.vocab);
        SamplingParams q = p;
        q.seed = 99 + i;
        if (i == 7) q.seed.reset();
        others.push_back(rig.engine->submit(prompt, q));
        if (i == 4) rig.engine->step();  // the seeded request joins a running batch
    }
    auto h = rig.engine->submit(ref.p[0].ids, p);
    rig.engine->run_until_idle();
    EXPECT_EQ(drain(*h), alone);
    EXPECT_EQ(alone.size(), 24u);
}

TEST(EngineScheduler, NeverRunsMoreThanMaxNumSeqs) {
    // Seven requests, a cap of three: no step may sample for, or hold running, more than three,
    // and the cap must be reached (so the check has something to catch). A small token budget
    // makes some prompts prefill over several steps, running without sampling.
    for (int64_t budget : {4096, 24}) {
        auto rig = make_rig("kimi_k2", 1, 64, budget, 3);
        auto ref = load_golden_reference("kimi_k2");
        std::vector<std::shared_ptr<RequestHandle>> handles;
        for (int i = 0; i < 7; ++i) {
            std::vector<int32_t> prompt(ref.p[i % 2].ids.begin(),
                                        ref.p[i % 2].ids.begin() + 10 + 3 * i);
            handles.push_back(rig.engine->submit(prompt, greedy(6)));
        }
        int64_t most_sampled = 0, most_running = 0;
        size_t seen_before = 0;
        while (rig.engine->step()) {
            const int64_t sampled = static_cast<int64_t>(rig.seen->logits.size() - seen_before);
            seen_before = rig.seen->logits.size();
            const EngineStats st = rig.engine->stats();
            EXPECT_LE(sampled, 3) << "budget " << budget << ", step " << st.steps;
            EXPECT_LE(st.running, 3) << "budget " << budget << ", step " << st.steps;
            most_sampled = std::max(most_sampled, sampled);
            most_running = std::max(most_running, st.running);
        }
        EXPECT_EQ(most_sampled, 3) << "budget " << budget;
        EXPECT_EQ(most_running, 3) << "budget " << budget;
        for (auto& h : handles) {
            RequestOutput last;
            EXPECT_EQ(drain(*h, &last).size(), 6u);
            EXPECT_EQ(last.reason, FinishReason::Length);
        }
    }
}

TEST(EngineTraffic, RandomRequestsAndCancellationsFreeEveryBlock) {
    auto rig = make_rig("v3_grouped_yarn", 2, 12, 64, 8);  // small cache: preemptions happen
    std::mt19937 rng(11);
    std::vector<int32_t> shared(40);
    for (auto& t : shared) t = static_cast<int32_t>(rng() % 256);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    int submitted = 0;
    while (submitted < 200) {
        for (int k = rng() % 4; k > 0 && submitted < 200; --k, ++submitted) {
            std::vector<int32_t> prompt;
            if (rng() % 2) prompt.assign(shared.begin(), shared.begin() + 1 + rng() % 40);
            for (int n = 1 + rng() % 30; n > 0; --n)
                prompt.push_back(static_cast<int32_t>(rng() % 256));
            SamplingParams p;
            p.temperature = (rng() % 2) ? 0.0 : 0.8;
            p.max_tokens = 1 + rng() % 20;
            p.seed = rng();
            handles.push_back(rig.engine->submit(prompt, p));
        }
        if (rng() % 3 == 0 && !handles.empty()) handles[rng() % handles.size()]->cancel();
        rig.engine->step();
    }
    rig.engine->run_until_idle();
    int finished = 0, aborted = 0;
    for (auto& h : handles) {
        RequestOutput last;
        drain(*h, &last);
        finished += last.finished;
        aborted += last.reason == FinishReason::Abort;
    }
    EXPECT_EQ(finished, 200);
    EXPECT_GT(aborted, 0);
    EXPECT_GT(rig.engine->stats().preemptions, 0) << rig.engine->stats().steps << " steps";
    EXPECT_EQ(rig.engine->block_manager().num_used(), 0);
    rig.engine->block_manager().check_invariants();
}

}  // namespace
}  // namespace myriad::testing

namespace myriad::testing {
namespace {

TEST(EngineThread, ClientsOnOtherThreadsDrainAndCancel) {
    auto rig = make_rig("kimi_k2", 2, 64, 256);
    rig.engine->start();
    auto ref = load_golden_reference("kimi_k2");
    std::vector<std::thread> clients;
    std::vector<std::vector<TokenId>> got(4);
    std::vector<FinishReason> reasons(4);
    for (int c = 0; c < 4; ++c)
        clients.emplace_back([&, c] {
            SamplingParams p = greedy(c == 3 ? 1000 : 9);
            auto h = rig.engine->submit(ref.p[c % 2].ids, p);
            RequestOutput out;
            while (h->next(out)) {
                got[c].insert(got[c].end(), out.tokens.begin(), out.tokens.end());
                if (c == 3 && got[c].size() == 5) h->cancel();
                if (out.finished) reasons[c] = out.reason;
            }
        });
    for (auto& t : clients) t.join();
    for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(reasons[c], FinishReason::Length) << c;
        EXPECT_EQ(got[c], std::vector<TokenId>(ref.p[c % 2].generated.begin(),
                                               ref.p[c % 2].generated.begin() + 9))
            << c;
    }
    EXPECT_EQ(reasons[3], FinishReason::Abort);
    EXPECT_LT(got[3].size(), 1000u);
}

}  // namespace
}  // namespace myriad::testing
