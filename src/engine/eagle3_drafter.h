// Eagle3Drafter: drafts from an EAGLE3 draft checkpoint (--speculative eagle3 --draft-model DIR;
// model/eagle3_config.h reads it, model/eagle3_forward.h runs it). At position p the draft takes
// the target's inputs of its aux layers there (DeepseekV3's LayerInputs, fused by fc) and the
// token at p + 1, and predicts the token at p + 2, as MtpDrafter does with the MTP layer.
//
// After every step the draft runs over each sequence's newly computed positions (prompt chunks
// too), appending to the sequence's own host KV cache; the last row of a sequence that goes on
// decoding gives the first draft token (greedy: the argmax over the draft vocabulary, mapped to
// the target's by d2t). Before the next step, k > 1 chains the layer on itself: its output hidden
// state (before the final norm) and the token it drafted are the next row's input, as vLLM's
// EAGLE3 proposer does. The next step's rows cut the cache back to the first position the target
// recomputes, so rejected drafts leave nothing behind. Drafts are point masses: verification
// keeps greedy output token for token and sampling's distribution exact.
//
// The cache is per sequence on the host, not in the target's paged blocks: a prompt prefix that
// came from the prefix cache has no draft keys there, and the draft attends from the first
// position it computed (drafts may differ from a cold run's; the output does not).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/drafter.h"
#include "format/checkpoint.h"
#include "model/eagle3_forward.h"

namespace myriad {

class Eagle3Drafter : public Drafter {
  public:
    // Reads the draft folder `dir` and checks it against the workers' target (bad input naming
    // the file and the field or tensor).
    Eagle3Drafter(WorkerGroup& workers, const std::string& dir);
    bool wants_hidden() const override { return true; }
    std::vector<int64_t> hidden_layers() const override { return aux_layers_; }
    void after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& step,
                    const std::vector<float>& hidden,
                    const std::vector<SeqOutcome>& outcomes) override;
    void propose(const std::vector<Sequence*>& seqs) override;

    const Eagle3Draft& draft() const { return *draft_; }

  private:
    struct Ready {  // as MtpDrafter's: the first draft token at `length` tokens, and its row's out
        int64_t length = 0;
        TokenId token = 0;
        std::vector<float> hidden;
    };
    struct SeqState {
        Eagle3Cache cache;
        uint64_t seen = 0;  // the after_step that last saw it
    };
    TokenId pick(const float* logits) const;  // argmax over the draft vocabulary, as a target id

    WorkerGroup& workers_;
    Checkpoint checkpoint_;  // the draft's mapped files (its weights point into them)
    std::unique_ptr<Eagle3Draft> draft_;
    std::vector<int64_t> aux_layers_;
    std::map<uint64_t, SeqState> seqs_;  // by sequence id
    std::map<uint64_t, Ready> ready_;
    uint64_t steps_ = 0;
    std::vector<float> logits_, out_;
};

}  // namespace myriad
