// MtpDrafter: drafts from the checkpoint's own multi-token-prediction layer (DeepSeek-V3/R1's
// num_nextn_predict_layers; reference.md §1.9), loaded by WorkerGroupOptions::mtp. At position p
// the layer takes the target's hidden state there (before the final norm) and the token at p + 1
// and predicts the token at p + 2.
//
// After every step the layer runs over each sequence's newly computed positions (prompt chunks
// too), writing its own latent cache at the target's slots; the last row of a sequence that goes
// on decoding gives the first draft token (greedy: the argmax). Before the next step, k > 1
// chains the layer on itself, as vLLM does with one layer: the layer's output hidden state and
// the token it drafted are the next position's input. Chained positions' cache entries are
// rewritten from the target's hidden states once the target computes those positions, so the
// rollback of rejected drafts needs nothing more. Drafts are point masses: verification keeps
// greedy output token for token and sampling's distribution exact.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/drafter.h"

namespace myriad {

class MtpDrafter : public Drafter {
  public:
    explicit MtpDrafter(WorkerGroup& workers);
    bool wants_hidden() const override { return true; }
    void after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& step,
                    const std::vector<float>& hidden,
                    const std::vector<SeqOutcome>& outcomes) override;
    void propose(const std::vector<Sequence*>& seqs) override;

  private:
    // A sequence's first draft token, for the sequence at `length` tokens, and the MTP layer's
    // output hidden state of the row that drafted it (the input of a chained draft).
    struct Ready {
        int64_t length = 0;
        TokenId token = 0;
        std::vector<float> hidden;
    };

    WorkerGroup& workers_;
    std::map<uint64_t, Ready> ready_;  // by sequence id
    std::vector<float> logits_, out_;  // step buffers
};

// The index of the largest of `n` values (the first of equals; 0 when none is a number).
TokenId argmax_token(const float* values, int64_t n);

}  // namespace myriad
