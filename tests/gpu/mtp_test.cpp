// The MTP drafter on the CUDA backend (tests/goldens_mtp/v3_mtp): the MTP layer's logits against
// the torch reference and the CPU backend, one chunk and row by row through its cache; and greedy
// output with --speculative mtp equals the output without, token for token up to the first
// position where the plain run's top-2 margin is below 1e-3 (verification rows take other
// kernels than decode rows, so a near-tie may flip), in mixed batches, the device sampling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/engine.h"
#include "engine/mtp_drafter.h"
#include "golden_reference.h"
#include "model_runner.h"

namespace myriad::testing {
namespace {

constexpr double kLogitTol = 2e-2;  // BF16 activations in the GPU's GEMMs

std::unique_ptr<LoadedModel> load(Device device, bool mtp) {
    const std::string dir = mtp_golden_dir();
    auto m = std::make_unique<LoadedModel>();
    m->config = load_model_config(dir);
    m->checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.kv_blocks = 256;
    wo.device = device;
    wo.threads = 1;
    wo.mtp = mtp;
    m->workers = std::make_unique<WorkerGroup>(m->config, *m->checkpoint, wo);
    return m;
}

// MTP rows [begin, end) over hidden/next (cache blocks 0, 1, ...), in one step; poisoned first.
std::vector<float> mtp_logits(WorkerGroup& w, const std::vector<TokenId>& next,
                              const std::vector<float>& hidden, int64_t begin, int64_t end) {
    const int64_t H = w.config().hidden_size, V = w.config().vocab_size;
    std::vector<TokenId> ids(next.begin() + begin, next.begin() + end);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < end - begin; ++i) rows.push_back(static_cast<int32_t>(i));
    StepInput st = single_sequence_step(ids, begin, w.options().kv_block_size, rows);
    st.eager = true;
    std::vector<float> logits(static_cast<size_t>((end - begin) * V), NAN);
    std::vector<float> out(static_cast<size_t>((end - begin) * H), NAN);
    w.mtp_step(st, hidden.data() + begin * H, logits.data(), out.data());
    return logits;
}

TEST(GpuMtp, LogitsMatchTheReferenceAndTheCpu) {
    const MtpReference ref = load_mtp_reference();
    auto gpu = load(Device::Cuda, true);
    auto cpu = load(Device::Cpu, true);
    const int64_t T = static_cast<int64_t>(ref.prompt.size()), V = gpu->config.vocab_size;
    std::vector<TokenId> next(ref.prompt.begin() + 1, ref.prompt.end());
    next.push_back(ref.g0);
    const std::vector<float> c = mtp_logits(*cpu->workers, next, ref.hidden, 0, T);
    const std::vector<float> g = mtp_logits(*gpu->workers, next, ref.hidden, 0, T);
    EXPECT_LE(max_row_rel_diff(g, ref.logits, V), kLogitTol);
    EXPECT_LE(max_row_rel_diff(g, c, V), kLogitTol);
    // A prefix, then row by row through the GPU's MTP cache (the absorbed decode kernels).
    std::vector<float> pieced = mtp_logits(*gpu->workers, next, ref.hidden, 0, T - 6);
    for (int64_t p = T - 6; p < T; ++p) {
        const std::vector<float> one = mtp_logits(*gpu->workers, next, ref.hidden, p, p + 1);
        pieced.insert(pieced.end(), one.begin(), one.end());
    }
    EXPECT_LE(max_row_rel_diff(pieced, ref.logits, V), kLogitTol);
    EXPECT_EQ(argmax_token(g.data() + (T - 1) * V, V), ref.chain[0]);
}

struct Greedy {
    std::vector<std::vector<TokenId>> tokens;
    std::vector<std::vector<float>> margins;  // per request: each token's top-2 margin (plain run)
    EngineStats stats;
};

Greedy run(WorkerGroup& workers, const std::vector<std::vector<TokenId>>& prompts,
           const std::vector<int64_t>& max_tokens, SpeculativeMethod method, int64_t k) {
    auto margins = std::make_shared<std::map<std::pair<uint64_t, int64_t>, float>>();
    const int64_t vocab = workers.config().vocab_size;
    EngineConfig ec;
    ec.check_invariants = true;
    ec.scheduler.max_num_batched_tokens = 24;
    ec.speculative.method = method;
    ec.speculative.num_speculative_tokens = k;
    if (method == SpeculativeMethod::None)
        ec.logits_observer = [margins, vocab](uint64_t id, int64_t pos, const float* l) {
            std::vector<float> v(l, l + vocab);
            std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<>());
            (*margins)[{id, pos}] = v[0] - v[1];
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
        while (handles[i]->try_next(o)) {
            EXPECT_TRUE(o.error.empty()) << o.error;
            g.tokens.back().insert(g.tokens.back().end(), o.tokens.begin(), o.tokens.end());
        }
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

TEST(GpuMtp, GreedyOutputUnchangedUpToANearTie) {
    const MtpReference ref = load_mtp_reference();
    auto m = load(Device::Cuda, true);
    ASSERT_TRUE(m->workers->backend_samples());
    const std::vector<std::vector<TokenId>> prompts = {
        ref.prompt,
        std::vector<TokenId>(ref.prompt.begin(), ref.prompt.begin() + 9),
        std::vector<TokenId>(ref.prompt.begin() + 5, ref.prompt.end()),
        ref.prompt,
        {7}};
    const std::vector<int64_t> max_tokens = {30, 24, 17, 11, 20};
    const Greedy plain = run(*m->workers, prompts, max_tokens, SpeculativeMethod::None, 3);
    for (int64_t k : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << "draft length " << k);
        const Greedy g = run(*m->workers, prompts, max_tokens, SpeculativeMethod::Mtp, k);
        EXPECT_GT(g.stats.spec_draft_tokens, 0);
        for (size_t i = 0; i < prompts.size(); ++i) {
            SCOPED_TRACE(::testing::Message() << "request " << i);
            ASSERT_EQ(g.tokens[i].size(), plain.tokens[i].size());
            for (size_t j = 0; j < plain.tokens[i].size(); ++j) {
                if (plain.margins[i][j] < 1e-3f) break;  // a near-tie: may go either way
                ASSERT_EQ(g.tokens[i][j], plain.tokens[i][j]) << "token " << j;
            }
        }
    }
}

}  // namespace
}  // namespace myriad::testing
