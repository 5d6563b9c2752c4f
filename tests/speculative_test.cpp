// Speculative decoding (engine/drafter.h, engine/step_update.h): prompt lookup drafts, and the
// engine's output with drafts equal to its output without — greedy token for token on every
// golden checkpoint and the shipped model, in mixed batches (some sequences speculating, some
// not, some prefilling), with the prefix cache, stop ids, max_tokens inside an accepted run and
// logprobs; seeded sampling draw for draw (the draft token is kept exactly when the plain
// sampler would have drawn it), so its distribution over seeds is the plain one.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "engine/ngram_drafter.h"
#include "engine/ngram_index.h"
#include "golden_reference.h"
#include "model_runner.h"
#include "random_model.h"
#include "sampling_runs.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

constexpr double kLogprobTol = 1e-4;

TEST(NgramDraft, TakesWhatFollowedTheMostRecentLongestMatch) {
    // ... 1 2 3 [9 9] ... 1 2 3 [7 8] ... 1 2 3: the most recent match of "1 2 3" is followed by
    // 7 8.
    const std::vector<TokenId> t = {1, 2, 3, 9, 9, 4, 1, 2, 3, 7, 8, 5, 1, 2, 3};
    EXPECT_EQ(ngram_draft(t, 2, 1, 4), (std::vector<TokenId>{7, 8}));
    EXPECT_EQ(ngram_draft(t, 5, 1, 4), (std::vector<TokenId>{7, 8, 5, 1, 2}));
    // The longest suffix first: "4 1 2 3" occurs once (followed by 7), "3" alone last before 5.
    const std::vector<TokenId> u = {4, 1, 2, 3, 7, 0, 2, 3, 6, 0, 4, 1, 2, 3};
    EXPECT_EQ(ngram_draft(u, 1, 1, 4), (std::vector<TokenId>{7}));
    EXPECT_EQ(ngram_draft(u, 1, 1, 2), (std::vector<TokenId>{6}));
    // No earlier occurrence of any suffix of at least min_n tokens: no draft.
    EXPECT_TRUE(ngram_draft(std::vector<TokenId>{1, 2, 3, 4}, 3, 1, 4).empty());
    EXPECT_TRUE(ngram_draft(std::vector<TokenId>{1, 2, 5, 2}, 3, 2, 4).empty());
    EXPECT_EQ(ngram_draft(std::vector<TokenId>{1, 2, 5, 2}, 3, 1, 4), (std::vector<TokenId>{5, 2}));
    // A run of one token proposes more of it; k = 0 proposes nothing.
    EXPECT_EQ(ngram_draft(std::vector<TokenId>{8, 8, 8}, 3, 1, 4), (std::vector<TokenId>{8}));
    EXPECT_TRUE(ngram_draft(t, 0, 1, 4).empty());
}

// The index's drafts are ngram_draft's, token for token, as a sequence grows one token at a time
// (small vocabularies, so most suffixes recur), for every (k, min_n, max_n) the flags allow here.
TEST(NgramDraft, IndexMatchesTheScanAsTheSequenceGrows) {
    std::mt19937 rng(12345);
    int64_t drafts = 0;
    for (int vocab : {2, 3, 5, 40}) {
        for (int trial = 0; trial < 6; ++trial) {
            const int64_t k = 1 + trial % 4, min_n = 1 + trial % 2, max_n = 2 + trial % 4;
            std::vector<TokenId> t;
            NgramIndex index;
            std::uniform_int_distribution<int> tok(0, vocab - 1);
            for (int i = 0; i < 300; ++i) {
                // Now and then copy an earlier stretch, as an answer repeating its prompt does.
                if (i > 20 && i % 37 == 0) {
                    const size_t from = static_cast<size_t>(tok(rng)) % (t.size() - 10);
                    for (size_t j = 0; j < 8; ++j) t.push_back(t[from + j]);
                }
                t.push_back(tok(rng));
                const std::vector<TokenId> want = ngram_draft(t, k, min_n, max_n);
                ASSERT_EQ(index.draft(t, k, min_n, max_n), want)
                    << "vocab " << vocab << ", length " << t.size() << ", k " << k << ", n "
                    << min_n << ".." << max_n;
                drafts += want.empty() ? 0 : 1;
            }
            // A shorter sequence (another one) rebuilds the index.
            const std::vector<TokenId> other(t.begin(), t.begin() + 50);
            EXPECT_EQ(index.draft(other, k, min_n, max_n), ngram_draft(other, k, min_n, max_n));
        }
    }
    EXPECT_GT(drafts, 1000);  // the comparison covered drafts, not only empty answers
}

TEST(NgramDraft, LengthFollowsTheAcceptance) {
    EXPECT_EQ(next_draft_limit(3, 3, 3, 5), 4);  // all taken: one more
    EXPECT_EQ(next_draft_limit(5, 5, 5, 5), 5);  // up to the maximum
    EXPECT_EQ(next_draft_limit(4, 4, 1, 5), 2);  // one taken: two next
    EXPECT_EQ(next_draft_limit(4, 4, 0, 5), 1);  // never below one
    EXPECT_EQ(next_draft_limit(4, 0, 0, 5), 4);  // no draft: unchanged
}

TEST(NgramDraft, RestsLongerAsDraftsKeepMissing) {
    EXPECT_EQ(next_draft_rest(1, 2), 0);  // one miss: no rest yet
    EXPECT_EQ(next_draft_rest(2, 2), 2);
    EXPECT_EQ(next_draft_rest(3, 2), 4);
    EXPECT_EQ(next_draft_rest(6, 2), 32);
    EXPECT_EQ(next_draft_rest(60, 2), 32);  // at most 32 steps
    EXPECT_EQ(next_draft_rest(60, 0), 0);   // 0: never rests
}

// Drafts whose first token is never the model's: each is refused whole (sampled kinds too, as a
// verified row draws what the plain row drew), and the sequences rest from drafting, so that
// far fewer drafts run than with resting off; every kind's output is the plain one either way.
class MissingDrafter : public Drafter {
  public:
    MissingDrafter(std::vector<std::vector<TokenId>> outputs, int64_t vocab)
        : outputs_(std::move(outputs)), vocab_(vocab) {}
    void propose(const std::vector<Sequence*>& seqs) override {
        for (Sequence* seq : seqs) {
            seq->draft.clear();
            const size_t i = static_cast<size_t>(seq->id - 1);
            const size_t n = static_cast<size_t>(seq->num_output());
            if (i >= outputs_.size() || n >= outputs_[i].size()) continue;
            for (int64_t j = 0; j < seq->draft_limit; ++j)
                seq->draft.push_back(static_cast<TokenId>((outputs_[i][n] + 1 + j) % vocab_));
        }
    }

  private:
    std::vector<std::vector<TokenId>> outputs_;
    int64_t vocab_;
};

TEST(SpeculativeKinds, DraftsThatKeepMissingRest) {
    const auto plain = run_request_kinds(Device::Cpu, BackendSampling::Off);
    int64_t drafts[2] = {0, 0};
    for (int64_t rest_after : {int64_t{2}, int64_t{0}}) {
        SCOPED_TRACE(::testing::Message() << "rest after " << rest_after << " misses");
        KindsRun run;
        run.rest_after_misses = rest_after;
        EngineStats st;
        auto drafter = std::make_shared<MissingDrafter>(outcome_tokens(plain), 320);
        const auto spec = run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::Auto,
                                            drafter, 3, &st, run);
        ASSERT_EQ(spec.size(), plain.size());
        for (size_t i = 0; i < plain.size(); ++i) {
            EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "request kind " << i;
            EXPECT_EQ(spec[i].reason, plain[i].reason) << "request kind " << i;
        }
        EXPECT_EQ(st.spec_accepted_tokens, 0);
        EXPECT_GT(st.spec_drafts, 0);
        drafts[rest_after == 0] = st.spec_drafts;
    }
    EXPECT_LT(2 * drafts[0], drafts[1])
        << "resting ran " << drafts[0] << " drafts, not resting " << drafts[1];
}

// Every sampling kind (greedy, temperatures with top-k/top-p/min-p, penalties, logit bias,
// min_tokens, logprobs, forced tokens, structured output with and without reasoning), the
// engine sampling and the backend sampling: drafts that are partly right change nothing.
TEST(SpeculativeKinds, EverySamplingKindUnchangedByDrafts) {
    for (BackendSampling mode : {BackendSampling::Off, BackendSampling::On}) {
        SCOPED_TRACE(mode == BackendSampling::On ? "backend sampling" : "engine sampling");
        const auto plain = run_request_kinds(Device::Cpu, mode);
        EngineStats st;
        auto drafter = std::make_shared<ReplayDrafter>(outcome_tokens(plain), 320);
        const auto spec = run_request_kinds(Device::Cpu, mode, WarmUp::Auto, drafter, 4, &st);
        // Tokens and finish reasons exactly; logprobs to float rounding (a verifying step's
        // matrix products have k + 1 rows, as a larger batch's have more).
        ASSERT_EQ(spec.size(), plain.size());
        for (size_t i = 0; i < plain.size(); ++i) {
            SCOPED_TRACE(::testing::Message() << "request kind " << i);
            EXPECT_EQ(spec[i].tokens, plain[i].tokens);
            EXPECT_EQ(spec[i].reason, plain[i].reason);
            ASSERT_EQ(spec[i].logprobs.size(), plain[i].logprobs.size());
            for (size_t j = 0; j < plain[i].logprobs.size(); ++j)
                EXPECT_NEAR(spec[i].logprobs[j], plain[i].logprobs[j], kLogprobTol) << j;
        }
        EXPECT_GT(st.spec_accepted_tokens, 0);
        EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);  // some were rejected
        EXPECT_GT(st.spec_drafts, 0);
    }
}

// Drafts of different lengths in one step (and sequences without one) padded to the longest
// (EngineConfig::pad_drafts, on where the backend samples: the CUDA graphs' one shape a step):
// with the padding forced on and off on the CPU, engine and backend sampling, every kind's
// output is the plain one, and the padding did run (and only when asked).
TEST(SpeculativeKinds, PaddedDraftsChangeNothing) {
    for (BackendSampling mode : {BackendSampling::Off, BackendSampling::On}) {
        const auto plain = run_request_kinds(Device::Cpu, mode);
        for (PadDrafts pad : {PadDrafts::On, PadDrafts::Off}) {
            SCOPED_TRACE(::testing::Message()
                         << (mode == BackendSampling::On ? "backend" : "engine") << " sampling, "
                         << (pad == PadDrafts::On ? "padded" : "not padded"));
            KindsRun run;
            run.pad = pad;
            EngineStats st;
            auto drafter = std::make_shared<ReplayDrafter>(outcome_tokens(plain), 320);
            const auto spec =
                run_request_kinds(Device::Cpu, mode, WarmUp::Auto, drafter, 4, &st, run);
            ASSERT_EQ(spec.size(), plain.size());
            for (size_t i = 0; i < plain.size(); ++i) {
                EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "request kind " << i;
                EXPECT_EQ(spec[i].reason, plain[i].reason) << "request kind " << i;
                ASSERT_EQ(spec[i].logprobs.size(), plain[i].logprobs.size()) << i;
                for (size_t j = 0; j < plain[i].logprobs.size(); ++j)
                    EXPECT_NEAR(spec[i].logprobs[j], plain[i].logprobs[j], kLogprobTol) << i;
            }
            EXPECT_GT(st.spec_accepted_tokens, 0);
            if (pad == PadDrafts::On)
                EXPECT_GT(st.spec_pad_rows, 0);
            else
                EXPECT_EQ(st.spec_pad_rows, 0);
        }
    }
}

// The warm-up step of a speculating engine has k + 1 logit rows a sequence (its workspaces
// sized for verification steps); what follows is unchanged.
TEST(SpeculativeKinds, WarmUpWithSpeculation) {
    const auto plain = run_request_kinds(Device::Cpu, BackendSampling::On, WarmUp::Off);
    auto drafter = std::make_shared<ReplayDrafter>(outcome_tokens(plain), 320);
    const auto spec = run_request_kinds(Device::Cpu, BackendSampling::On, WarmUp::On, drafter, 3);
    ASSERT_EQ(spec.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(spec[i].tokens, plain[i].tokens) << i;
}

struct SpecRun {
    std::vector<std::vector<TokenId>> tokens;
    std::vector<std::vector<SampleResult>> logprobs;
    std::vector<FinishReason> reasons;
    EngineStats stats;
};

// The requests all at once through one engine (budget `budget` tokens a step: prompts prefill
// in chunks while others decode), with `drafter` or `method` speculating.
SpecRun run_engine(WorkerGroup& workers, const std::vector<std::vector<TokenId>>& prompts,
                   const std::vector<SamplingParams>& params, int64_t budget,
                   SpeculativeMethod method = SpeculativeMethod::None,
                   std::shared_ptr<Drafter> drafter = nullptr, int64_t k = 3) {
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = budget;
    ec.check_invariants = true;
    ec.speculative.method = method;
    ec.speculative.num_speculative_tokens = k;
    ec.drafter = std::move(drafter);
    Engine engine(workers, ec);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (size_t i = 0; i < prompts.size(); ++i)
        handles.push_back(engine.submit(prompts[i], params[i]));
    engine.run_until_idle();
    SpecRun r;
    for (auto& h : handles) {
        r.tokens.emplace_back();
        r.logprobs.emplace_back();
        r.reasons.push_back(FinishReason::None);
        RequestOutput o;
        while (h->try_next(o)) {
            r.tokens.back().insert(r.tokens.back().end(), o.tokens.begin(), o.tokens.end());
            r.logprobs.back().insert(r.logprobs.back().end(), o.logprobs.begin(), o.logprobs.end());
            if (o.finished) r.reasons.back() = o.reason;
        }
    }
    r.stats = engine.stats();
    EXPECT_EQ(engine.block_manager().num_used(), 0);
    return r;
}

void expect_same(const SpecRun& got, const SpecRun& want) {
    ASSERT_EQ(got.tokens.size(), want.tokens.size());
    for (size_t i = 0; i < want.tokens.size(); ++i) {
        SCOPED_TRACE(::testing::Message() << "request " << i);
        EXPECT_EQ(got.tokens[i], want.tokens[i]);
        EXPECT_EQ(got.reasons[i], want.reasons[i]);
        ASSERT_EQ(got.logprobs[i].size(), want.logprobs[i].size());
        for (size_t j = 0; j < want.logprobs[i].size(); ++j) {
            const SampleResult &a = got.logprobs[i][j], &b = want.logprobs[i][j];
            EXPECT_EQ(a.token, b.token);
            EXPECT_NEAR(a.logprob, b.logprob, kLogprobTol) << "token " << j;
            ASSERT_EQ(a.top.size(), b.top.size());
            for (size_t t = 0; t < b.top.size(); ++t) {
                EXPECT_EQ(a.top[t].token, b.top[t].token) << "token " << j;
                EXPECT_NEAR(a.top[t].logprob, b.top[t].logprob, kLogprobTol) << "token " << j;
            }
        }
    }
}

// A prompt that repeats itself, so a model's continuation may follow it.
std::vector<TokenId> repeating(const std::vector<TokenId>& base, size_t times) {
    std::vector<TokenId> p;
    for (size_t i = 0; i < times; ++i) p.insert(p.end(), base.begin(), base.end());
    return p;
}

SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
}

// Mixed batches on one checkpoint: the golden prompts twice (the second time from the prefix
// cache), a prompt repeating itself, one request with logprobs, one stopping on a token of its
// own output, one whose max_tokens lands inside a run; greedy. The plain run, then ngram and
// the replay drafter (partly wrong drafts) at two draft lengths.
void check_checkpoint(const std::string& dir, const std::vector<std::vector<TokenId>>& base,
                      int tp) {
    auto m = load_model(dir, tp, {}, 256);
    const int64_t vocab = m->config.vocab_size;
    std::vector<std::vector<TokenId>> prompts;
    std::vector<SamplingParams> params;
    for (const auto& b : base) {
        prompts.push_back(b);
        params.push_back(greedy(40));
        prompts.push_back(repeating(std::vector<TokenId>(b.begin(), b.begin() + 5), 6));
        params.push_back(greedy(48));
    }
    prompts.push_back(base[0]);  // again: its blocks come from the prefix cache
    params.push_back(greedy(24));
    prompts.push_back(base[1]);
    params.push_back(greedy(30));
    params.back().top_logprobs = 3;
    prompts.push_back(base[0]);
    params.push_back(greedy(11));  // max_tokens inside a run
    const SpecRun plain = run_engine(*m->workers, prompts, params, 24);
    // Stop on the plain run's 14th token of request 1 (its first occurrence).
    SamplingParams stop = greedy(48);
    stop.ignore_eos = false;
    stop.stop_token_ids = {plain.tokens[1][13]};
    prompts.push_back(prompts[1]);
    params.push_back(stop);
    const SpecRun plain_all = run_engine(*m->workers, prompts, params, 24);
    EXPECT_EQ(plain_all.reasons.back(), FinishReason::Stop);
    EXPECT_LE(plain_all.tokens.back().size(), 14u);

    for (int64_t k : {2, 5}) {
        SCOPED_TRACE(::testing::Message() << "draft length " << k);
        const SpecRun ngram =
            run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::Ngram, nullptr, k);
        expect_same(ngram, plain_all);
        EXPECT_GT(ngram.stats.spec_draft_tokens, 0);
        auto replay = std::make_shared<ReplayDrafter>(plain_all.tokens, vocab);
        const SpecRun r =
            run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::None, replay, k);
        expect_same(r, plain_all);
        EXPECT_GT(r.stats.spec_accepted_tokens, 0);
        EXPECT_LT(r.stats.spec_accepted_tokens, r.stats.spec_draft_tokens);
        // Fewer steps than tokens: accepted drafts gave several tokens a step.
        EXPECT_LT(r.stats.steps, plain_all.stats.steps);
    }
}

class SpeculativeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeGolden, GreedyOutputUnchangedInMixedBatches) {
    auto ref = load_golden_reference(GetParam());
    check_checkpoint(golden_dir(GetParam()), {ref.p[0].ids, ref.p[1].ids}, 1);
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeGolden,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(kGoldenModels),
                                                                      std::end(kGoldenModels))));

TEST(SpeculativeGolden, TensorParallelRanks) {
    auto ref = load_golden_reference("kimi_k2");
    check_checkpoint(golden_dir("kimi_k2"), {ref.p[0].ids, ref.p[1].ids}, 2);
}

TEST(SpeculativeShipped, GreedyOutputUnchangedAndDraftsAccepted) {
    const std::string dir = std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
    // Token ids of a text that repeats (the shipped model continues such text in kind).
    std::vector<TokenId> a, b;
    for (int i = 0; i < 12; ++i) a.push_back(static_cast<TokenId>(100 + (i * 37) % 900));
    for (int i = 0; i < 9; ++i) b.push_back(static_cast<TokenId>(50 + (i * 53) % 700));
    check_checkpoint(dir, {repeating(a, 3), repeating(b, 2)}, 1);
}

// Sampling: over many seeds, with a draft token that is sometimes right, the first drafted
// position's tokens have the distribution of those without speculation (total variation far
// below what accepting drafts blindly would give) — here draw for draw.
// EngineConfig::draft_forced (bench-model --dataset): an answer forced through a model is drafted
// and verified like a generated one. The forced tokens come out in order whatever the drafts; an
// answer that copies its prompt has drafts accepted, each draft's rejected rows rolled back (no
// block left in use); without draft_forced, forced tokens are never drafted.
TEST(SpeculativeForced, ForcedAnswersDraftedWhenAsked) {
    auto model = load_model(std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny", 1);
    std::vector<TokenId> prompt;
    std::mt19937 rng(3);
    for (int i = 0; i < 60; ++i) prompt.push_back(static_cast<TokenId>(100 + rng() % 500));
    // The answer: the prompt's tokens 10..39 with two edits, then tokens 5..19.
    std::vector<TokenId> answer(prompt.begin() + 10, prompt.begin() + 40);
    answer[7] = 7;
    answer[21] = 21;
    answer.insert(answer.end(), prompt.begin() + 5, prompt.begin() + 20);
    for (bool draft_forced : {false, true}) {
        SCOPED_TRACE(draft_forced ? "draft_forced" : "forced tokens never drafted");
        EngineConfig ec;
        ec.check_invariants = true;
        ec.speculative.method = SpeculativeMethod::Ngram;
        ec.speculative.num_speculative_tokens = 4;
        ec.draft_forced = draft_forced;
        Engine engine(*model->workers, ec);
        SamplingParams p;
        p.temperature = 0;
        p.ignore_eos = true;
        p.max_tokens = static_cast<int64_t>(answer.size());
        p.forced_tokens = answer;
        auto h = engine.submit(prompt, p);
        engine.run_until_idle();
        std::vector<TokenId> out;
        RequestOutput o;
        while (h->try_next(o)) out.insert(out.end(), o.tokens.begin(), o.tokens.end());
        EXPECT_EQ(out, answer);
        const EngineStats st = engine.stats();
        if (draft_forced) {
            EXPECT_GT(st.spec_accepted_tokens, 20);
            EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);  // the edits are rejected
            EXPECT_LT(st.steps, static_cast<int64_t>(answer.size()));
        } else {
            EXPECT_EQ(st.spec_draft_tokens, 0);
        }
        EXPECT_EQ(engine.block_manager().num_used(), 0);
    }
}

TEST(SpeculativeSampling, DistributionOverSeedsUnchanged) {
    TempDir dir;
    write_random_model(dir.path(), small_config(), 11);
    auto m = load_model(dir.path(), 1, {}, 512);
    const int64_t vocab = m->config.vocab_size;
    const int64_t n = 400;
    std::vector<std::vector<TokenId>> prompts(static_cast<size_t>(n), {5, 17, 33, 2, 9, 41});
    std::vector<SamplingParams> params;
    for (int64_t s = 0; s < n; ++s) {
        SamplingParams p;
        p.temperature = 1.0;
        p.top_k = 8;  // a few likely tokens: the draft is often right
        p.max_tokens = 3;
        p.ignore_eos = true;
        p.seed = 1000 + s;
        params.push_back(p);
    }
    const SpecRun plain = run_engine(*m->workers, prompts, params, 512);
    // The draft: the most frequent second token, then the most frequent third.
    std::map<TokenId, int64_t> second, third;
    for (const auto& t : plain.tokens) {
        ++second[t[1]];
        ++third[t[2]];
    }
    auto mode_of = [](const std::map<TokenId, int64_t>& h) {
        return std::max_element(h.begin(), h.end(),
                                [](const auto& x, const auto& y) { return x.second < y.second; })
            ->first;
    };
    const TokenId x1 = mode_of(second), x2 = mode_of(third);
    struct Fixed : Drafter {
        TokenId a, b;
        Fixed(TokenId a, TokenId b) : a(a), b(b) {}
        void propose(const std::vector<Sequence*>& seqs) override {
            for (Sequence* s : seqs)
                if (s->num_output() == 1) s->draft = {a, b};
        }
    };
    const SpecRun spec = run_engine(*m->workers, prompts, params, 512, SpeculativeMethod::None,
                                    std::make_shared<Fixed>(x1, x2), 2);
    EXPECT_GT(spec.stats.spec_accepted_tokens, 0);
    EXPECT_LT(spec.stats.spec_accepted_tokens, spec.stats.spec_draft_tokens);
    for (size_t pos : {size_t{1}, size_t{2}}) {
        std::vector<double> p(static_cast<size_t>(vocab)), q(static_cast<size_t>(vocab));
        for (int64_t s = 0; s < n; ++s) {
            p[static_cast<size_t>(plain.tokens[s][pos])] += 1.0 / n;
            q[static_cast<size_t>(spec.tokens[s][pos])] += 1.0 / n;
        }
        double tv = 0;
        for (int64_t v = 0; v < vocab; ++v) tv += 0.5 * std::fabs(p[v] - q[v]);
        // Accepting the draft always would move 1 - p(x) of the mass onto x.
        const double blind = 1.0 - p[static_cast<size_t>(pos == 1 ? x1 : x2)];
        EXPECT_GT(blind, 0.2) << "position " << pos;
        EXPECT_LT(tv, 0.05) << "position " << pos;
    }
    expect_same(spec, plain);  // and seed by seed
}

}  // namespace
}  // namespace myriad::testing
