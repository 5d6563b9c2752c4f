// Drafter: speculative decoding's proposer. Before each step it may give decoding sequences a
// draft — tokens it expects to follow the sequence's last one — which the step verifies along
// with that token (one row each, engine/step_builder.h); the post-step update keeps the longest
// prefix the model agrees with, plus the model's own next token (engine/step_update.h). Greedy
// output is the same as without a draft, token for token, and sampling's distribution too.
//
// Drafts come in a batch so a model-based drafter (the checkpoint's MTP layers: mtp_drafter.h; an
// EAGLE3 draft checkpoint: eagle3_drafter.h) can run forward passes of its own; the prompt-lookup
// drafter (ngram_drafter.h) needs none. Every drafter's draft is one token per position, chosen
// without sampling (a point mass): the post-step update's sample-and-compare then keeps sampling's
// distribution exact (step_update.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sequence.h"

namespace myriad {

class WorkerGroup;
struct ScheduledSeq;
struct BuiltStep;
struct SeqOutcome;

enum class SpeculativeMethod : uint8_t { None, Ngram, Mtp, Eagle3 };

struct SpeculativeConfig {
    SpeculativeMethod method = SpeculativeMethod::None;
    int64_t num_speculative_tokens = 3;  // the longest draft (vLLM's num_speculative_tokens)
    int64_t prompt_lookup_max = 4;       // ngram: the longest suffix matched
    int64_t prompt_lookup_min = 1;       // ngram: the shortest
    std::string draft_model;             // eagle3: the draft checkpoint folder (--draft-model)
    // Drafts refused whole in a row before a sequence rests from drafting (next_draft_rest);
    // 0: never rests. Off by default: on the GPU, resting after 2 misses made the v2lite BF16
    // golden's ngram run part from the plain run at a top-2 margin of 0.2 of its largest logit
    // (tests/gpu/speculative_test.cpp with MYRIAD_TEST_REST=2), which the CPU does not show
    // with the same engine path (backend sampling, padding): a GPU fault in some step shape
    // that resting brings about, not yet found.
    int64_t rest_after_misses = 0;
};

// "ngram", "mtp", "eagle3" (or "none") from --speculative; bad input names the flag otherwise.
SpeculativeMethod parse_speculative_method(const std::string& name);

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Sets seq->draft for each of `seqs` (decoding sequences; each draft at most
    // seq->draft_limit tokens long, maybe empty).
    virtual void propose(const std::vector<Sequence*>& seqs) = 0;
    // Whether after_step needs the target's hidden states (steps then run op by op).
    virtual bool wants_hidden() const { return false; }
    // With wants_hidden(): the target layers whose inputs the drafter takes (EAGLE3's aux hidden
    // states; DeepseekV3's LayerInputs); empty: the hidden state before the final norm.
    virtual std::vector<int64_t> hidden_layers() const { return {}; }
    // After each step's update, before its finished sequences leave: the step's batch, what ran,
    // every row's hidden state ([T, hidden] before the final norm, or with hidden_layers() each
    // row's layer inputs side by side, [T, layers x hidden]; empty unless wants_hidden()) and the
    // outcomes of its sampled sequences.
    virtual void after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& step,
                            const std::vector<float>& hidden,
                            const std::vector<SeqOutcome>& outcomes) {
        (void)batch;
        (void)step;
        (void)hidden;
        (void)outcomes;
    }
};

// The drafter of `config.method` over `workers` (the MTP drafter runs its layers there; they were
// loaded with WorkerGroupOptions::mtp; the EAGLE3 drafter reads config.draft_model); null for None.
std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config, WorkerGroup& workers);

// After a step verified `drafted` tokens of a sequence's draft and the model agreed with
// `accepted` of them: the draft length the sequence allows next (all accepted: one more, up to
// `max`; else one more than were accepted), so K follows the recent acceptance.
int64_t next_draft_limit(int64_t limit, int64_t drafted, int64_t accepted, int64_t max);

// After `misses` drafts in a row of which the model took no token: the steps the sequence goes
// without a draft before it tries again. None before `rest_after` misses (0: never), then 2, 4,
// 8, 16 and at most 32 steps a miss more, so that a sequence the drafter cannot predict (a
// model writing new text) decodes one row a step, and one whose text turns to copying finds its
// drafts again within 32 steps.
int64_t next_draft_rest(int64_t misses, int64_t rest_after);

}  // namespace myriad
