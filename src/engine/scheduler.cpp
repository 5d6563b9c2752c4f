#include "engine/scheduler.h"

#include <algorithm>

#include "util/error.h"

namespace myriad {

Scheduler::Scheduler(SchedulerConfig config, BlockManager& blocks)
    : config_(config), blocks_(blocks) {}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
    waiting_.push_back(std::move(seq));
}

std::vector<Sequence*> Scheduler::all() {
    std::vector<Sequence*> out;
    for (auto& s : running_) out.push_back(s.get());
    for (auto& s : waiting_) out.push_back(s.get());
    return out;
}

void Scheduler::preempt(size_t index) {
    std::unique_ptr<Sequence> seq = std::move(running_[index]);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
    blocks_.release(seq->blocks);
    seq->block_hashes.clear();
    seq->num_computed = 0;  // recomputed later, its own prefix may still be cached
    ++seq->preemptions;
    ++preemptions_;
    waiting_.push_front(std::move(seq));
}

std::vector<ScheduledSeq> Scheduler::schedule() {
    std::vector<ScheduledSeq> out;
    int64_t budget = config_.max_num_batched_tokens;
    bool preempted = false;
    // Running sequences: decode tokens and the rest of prompts already started.
    for (size_t i = 0; i < running_.size() && budget > 0;) {
        Sequence* seq = running_[i].get();
        if (seq->handle && seq->handle->paused()) {  // its client is not reading: skip it
            ++i;
            continue;
        }
        // A decoding sequence's draft rides along while the budget and the blocks allow.
        int64_t draft = seq->decoding() ? static_cast<int64_t>(seq->draft.size()) : 0;
        draft = std::max<int64_t>(0, std::min(draft, budget - 1));
        if (draft > 0 && !blocks_.grow(seq->blocks, seq->num_computed + 1 + draft)) draft = 0;
        seq->draft.resize(static_cast<size_t>(draft));
        const int64_t n = draft > 0 ? 1 + draft : std::min(seq->remaining(), budget);
        bool fits = blocks_.grow(seq->blocks, seq->num_computed + n);
        while (!fits && running_.size() > i + 1) {
            preempt(running_.size() - 1);  // the latest admitted gives way
            preempted = true;
            fits = blocks_.grow(seq->blocks, seq->num_computed + n);
        }
        if (!fits) {
            preempt(i);
            preempted = true;
            continue;
        }
        out.push_back(
            {seq, n, draft > 0 || seq->num_computed + n == static_cast<int64_t>(seq->tokens.size()),
             draft});
        budget -= n;
        ++i;
    }
    // Waiting sequences, oldest first, while the budget, the sequence cap and the blocks allow.
    while (!preempted && !waiting_.empty() && budget > 0 &&
           static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
        Sequence* seq = waiting_.front().get();
        if (seq->blocks.empty()) {
            seq->blocks = blocks_.take_cached_prefix(seq->tokens, seq->cacheable_tokens());
            seq->num_computed = static_cast<int64_t>(seq->blocks.size()) * blocks_.block_size();
            if (!seq->admitted) seq->cached_tokens = std::min(seq->num_computed, seq->prompt_len);
        }
        seq->draft.clear();  // a prompt (or a preempted sequence) recomputes first
        const int64_t n = std::min(seq->remaining(), budget);
        if (!blocks_.grow(seq->blocks, seq->num_computed + n)) {
            blocks_.release(seq->blocks);
            seq->block_hashes.clear();
            seq->num_computed = 0;
            break;
        }
        seq->admitted = true;
        out.push_back({seq, n, seq->num_computed + n == static_cast<int64_t>(seq->tokens.size())});
        budget -= n;
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
    }
    // The forward pass wants decoding sequences first (the absorbed attention form): those of
    // one token, then those verifying a draft, then the prefill chunks.
    std::stable_partition(out.begin(), out.end(),
                          [](const ScheduledSeq& s) { return s.num_tokens == 1 || s.draft > 0; });
    std::stable_partition(out.begin(), out.end(),
                          [](const ScheduledSeq& s) { return s.num_tokens == 1 && s.draft == 0; });
    return out;
}

std::unique_ptr<Sequence> Scheduler::remove(Sequence* seq) {
    std::unique_ptr<Sequence> owned;
    auto r = std::find_if(running_.begin(), running_.end(),
                          [&](const auto& s) { return s.get() == seq; });
    if (r != running_.end()) {
        owned = std::move(*r);
        running_.erase(r);
    } else {
        auto w = std::find_if(waiting_.begin(), waiting_.end(),
                              [&](const auto& s) { return s.get() == seq; });
        MYRIAD_CHECK(w != waiting_.end(), "sequence {} is in no queue", seq->id);
        owned = std::move(*w);
        waiting_.erase(w);
    }
    blocks_.release(owned->blocks);
    return owned;
}

}  // namespace myriad
