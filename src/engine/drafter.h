// Drafter: speculative decoding's proposer. Before each step it may give decoding sequences a
// draft — tokens it expects to follow the sequence's last one — which the step verifies along
// with that token (one row each, engine/step_builder.h); the post-step update keeps the longest
// prefix the model agrees with, plus the model's own next token (engine/step_update.h). Greedy
// output is the same as without a draft, token for token, and sampling's distribution too.
//
// Drafts come in a batch so a model-based drafter (MTP layers, an EAGLE3 head) can run one
// forward pass of its own for every sequence; the prompt-lookup drafter (ngram_drafter.h)
// needs none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sequence.h"

namespace myriad {

enum class SpeculativeMethod : uint8_t { None, Ngram };

struct SpeculativeConfig {
    SpeculativeMethod method = SpeculativeMethod::None;
    int64_t num_speculative_tokens = 3;  // the longest draft (vLLM's num_speculative_tokens)
    int64_t prompt_lookup_max = 4;       // ngram: the longest suffix matched
    int64_t prompt_lookup_min = 1;       // ngram: the shortest
};

// "ngram" (or "none") from --speculative; bad input names the flag otherwise.
SpeculativeMethod parse_speculative_method(const std::string& name);

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Sets seq->draft for each of `seqs` (decoding sequences; each draft at most
    // seq->draft_limit tokens long, maybe empty).
    virtual void propose(const std::vector<Sequence*>& seqs) = 0;
};

// The drafter of `config.method`; null for None.
std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config);

// After a step verified `drafted` tokens of a sequence's draft and the model agreed with
// `accepted` of them: the draft length the sequence allows next (all accepted: one more, up to
// `max`; else one more than were accepted), so K follows the recent acceptance.
int64_t next_draft_limit(int64_t limit, int64_t drafted, int64_t accepted, int64_t max);

}  // namespace myriad
