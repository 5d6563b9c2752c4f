// Requests of every sampling kind run through an engine on the kimi_k2 golden checkpoint, for the
// tests that compare where sampling happens (the engine, or the backend: CPU or GPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "grammar/grammar.h"
#include "grammar/vocabulary.h"

namespace myriad::testing {

struct SamplingOutcome {
    std::vector<TokenId> tokens;
    std::vector<float> logprobs;  // per token: the chosen one's, then its top alternatives'
    FinishReason reason = FinishReason::Length;
};

// Greedy; temperature with top-k, top-p, min-p and their mix; repetition, presence and frequency
// penalties; logit bias (a token twice); stop ids masked until min_tokens; logprobs and forced
// tokens (rows the engine samples on the host); top_k 1; then structured output (kinds from
// kFirstConstrainedKind on): greedy, sampled with top-k/top-p and penalties, sampled after a
// reasoning gate, and with logprobs (a host row), each held to constrained_schema_grammar() over
// synthetic_vocabulary(). All seeded: 17 kinds, at most 20 tokens each (48 constrained).
std::vector<SamplingParams> request_kinds();
constexpr size_t kFirstConstrainedKind = 13;
// The golden model's 320 ids as bytes: printable ASCII, then pairs of JSON characters; ids
// kThinkOpen and kThinkClose are markers with no bytes.
std::shared_ptr<const grammar::Vocabulary> synthetic_vocabulary();
std::shared_ptr<const grammar::Grammar> constrained_schema_grammar();
constexpr TokenId kThinkOpen = 318, kThinkClose = 319;

// A drafter that knows the answers: request i (engine id i + 1) is proposed the next tokens of
// outputs[i] (what a run without speculation gave), every third draft with its last token
// changed, and past the end of outputs[i] tokens it will not take — so some draft tokens are
// accepted, some rejected, and some runs reach max_tokens or a stop inside an accepted run.
class ReplayDrafter : public Drafter {
  public:
    ReplayDrafter(std::vector<std::vector<TokenId>> outputs, int64_t vocab)
        : outputs_(std::move(outputs)), vocab_(vocab) {}
    void propose(const std::vector<Sequence*>& seqs) override;

  private:
    std::vector<std::vector<TokenId>> outputs_;
    int64_t vocab_;
    int64_t calls_ = 0;
};

// Where and how much run_request_kinds runs: the ranks, the golden checkpoint, the kinds (those
// of request_kinds() listed in `only`; empty: all), whether every sampled kind without top_k gets
// top_k 20 (rows then choose from candidates across ranks: ops/sample_candidates.h);
// gathered_bytes, when set, gets rank 0's bytes gathered over the run
// (WorkerGroup::gathered_bytes).
struct KindsRun {
    int tp = 1;
    std::vector<int> devices;  // the ranks' GPUs (empty: 0, 1, ...)
    std::string golden = "kimi_k2";
    std::vector<size_t> only;
    bool top_k_everywhere = false;
    int64_t* gathered_bytes = nullptr;
    PadDrafts pad = PadDrafts::Auto;  // EngineConfig::pad_drafts
    int64_t rest_after_misses = SpeculativeConfig{}.rest_after_misses;
};

// One engine (`run.tp` ranks on `device`, sampling `mode`, warm-up `warm`) running every kind at
// once, kind i on the golden prompt i % (their number); the outcomes in kind order. With
// `drafter`, it speculates (drafts of at most `draft_len`); `stats` gets the engine's counts.
std::vector<SamplingOutcome> run_request_kinds(Device device, BackendSampling mode,
                                               WarmUp warm = WarmUp::Auto,
                                               std::shared_ptr<Drafter> drafter = nullptr,
                                               int64_t draft_len = 3, EngineStats* stats = nullptr,
                                               const KindsRun& run = {});
// The outcomes' tokens (a ReplayDrafter's answers).
std::vector<std::vector<TokenId>> outcome_tokens(const std::vector<SamplingOutcome>& outcomes);

// The same tokens, logprobs and finish reason, kind by kind (failures name the kind).
void expect_same_outcomes(const std::vector<SamplingOutcome>& got,
                          const std::vector<SamplingOutcome>& want);

}  // namespace myriad::testing
