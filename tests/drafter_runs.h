// Engine runs for the drafter tests (MTP, EAGLE3): a drafter wrapped to keep every draft it
// proposed, greedy requests, and one engine run over a batch of prompts with a speculative
// method, every block free at the end.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/drafter.h"
#include "engine/engine.h"
#include "engine/worker_group.h"

namespace myriad::testing {

class RecordingDrafter : public Drafter {
  public:
    explicit RecordingDrafter(std::unique_ptr<Drafter> inner) : inner_(std::move(inner)) {}
    bool wants_hidden() const override { return inner_->wants_hidden(); }
    std::vector<int64_t> hidden_layers() const override { return inner_->hidden_layers(); }
    void after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& step,
                    const std::vector<float>& hidden,
                    const std::vector<SeqOutcome>& outcomes) override {
        inner_->after_step(batch, step, hidden, outcomes);
    }
    void propose(const std::vector<Sequence*>& seqs) override;
    std::map<uint64_t, std::vector<std::vector<TokenId>>> drafts;  // by sequence id

  private:
    std::unique_ptr<Drafter> inner_;
};

// Greedy, ignoring EOS, for max_tokens tokens.
SamplingParams greedy(int64_t max_tokens);

struct EngineRun {
    std::vector<std::vector<TokenId>> tokens;
    EngineStats stats;
};

// prompts[i] with params[i], all at once, a step budget of `budget` tokens; drafts by `method`
// (at most k tokens; `draft` the EAGLE3 folder) unless `drafter` is given.
EngineRun run_engine(WorkerGroup& w, const std::vector<std::vector<TokenId>>& prompts,
                     const std::vector<SamplingParams>& params, int64_t budget,
                     SpeculativeMethod method, int64_t k, const std::string& draft = "",
                     std::shared_ptr<Drafter> drafter = nullptr);

}  // namespace myriad::testing
