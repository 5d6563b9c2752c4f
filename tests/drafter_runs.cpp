#include "drafter_runs.h"

#include <gtest/gtest.h>

namespace myriad::testing {

void RecordingDrafter::propose(const std::vector<Sequence*>& seqs) {
    inner_->propose(seqs);
    for (Sequence* s : seqs) drafts[s->id].push_back(s->draft);
}

SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
}

EngineRun run_engine(WorkerGroup& w, const std::vector<std::vector<TokenId>>& prompts,
                     const std::vector<SamplingParams>& params, int64_t budget,
                     SpeculativeMethod method, int64_t k, const std::string& draft,
                     std::shared_ptr<Drafter> drafter) {
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = budget;
    ec.check_invariants = true;
    ec.speculative.method = method;
    ec.speculative.num_speculative_tokens = k;
    ec.speculative.draft_model = draft;
    ec.drafter = std::move(drafter);
    Engine engine(w, ec);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (size_t i = 0; i < prompts.size(); ++i)
        handles.push_back(engine.submit(prompts[i], params[i]));
    engine.run_until_idle();
    EngineRun r;
    for (auto& h : handles) {
        r.tokens.emplace_back();
        RequestOutput o;
        while (h->try_next(o)) {
            EXPECT_TRUE(o.error.empty()) << o.error;
            r.tokens.back().insert(r.tokens.back().end(), o.tokens.begin(), o.tokens.end());
        }
    }
    r.stats = engine.stats();
    EXPECT_EQ(engine.block_manager().num_used(), 0);
    return r;
}

}  // namespace myriad::testing
