// Scheduler: waiting and running queues. Each step is one flat batch within a token budget:
// decode tokens of running sequences first (with their drafts, when speculating), then chunks
// of prompts (chunked prefill). When KV blocks run out, a draft is dropped first, then the most
// recently admitted running sequence is preempted: its blocks are freed and it waits to be
// recomputed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/block_manager.h"
#include "engine/sequence.h"

namespace myriad {

struct SchedulerConfig {
    int64_t max_num_seqs = 64;
    int64_t max_num_batched_tokens = 2048;
};

struct ScheduledSeq {
    Sequence* seq = nullptr;
    int64_t num_tokens = 0;  // new tokens of this sequence in the step (its draft included)
    bool sample = false;     // the step reaches its last token: sample the next one
    int64_t draft = 0;       // of num_tokens, the tokens of seq->draft verified in this step
    // Of num_tokens, rows after the draft that only make every sequence of the step as long
    // (build_step's padding, for graph replay); their outputs are dropped, their KV rolled back.
    int64_t pad = 0;
};

class Scheduler {
  public:
    Scheduler(SchedulerConfig config, BlockManager& blocks);

    void add(std::unique_ptr<Sequence> seq);
    // The next step's sequences: plain decodes (one token) first, then decodes with a draft,
    // then prefill chunks; empty when there is nothing to run.
    std::vector<ScheduledSeq> schedule();
    // Removes a finished or cancelled sequence from either queue and frees its blocks.
    std::unique_ptr<Sequence> remove(Sequence* seq);

    bool idle() const { return waiting_.empty() && running_.empty(); }
    int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
    int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
    int64_t preemptions() const { return preemptions_; }
    // Every sequence, waiting or running (for cancellation checks).
    std::vector<Sequence*> all();

  private:
    void preempt(size_t running_index);

    SchedulerConfig config_;
    BlockManager& blocks_;
    std::deque<std::unique_ptr<Sequence>> waiting_;
    std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
    int64_t preemptions_ = 0;
};

}  // namespace myriad
