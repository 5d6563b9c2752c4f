#include "engine/mtp_drafter.h"

#include <algorithm>

#include "engine/step_update.h"
#include "engine/worker_group.h"
#include "util/error.h"

namespace myriad {

TokenId argmax_token(const float* values, int64_t n) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i)
        if (values[i] == values[i] && (best < 0 || values[i] > values[best])) best = i;
    return static_cast<TokenId>(std::max<int64_t>(best, 0));
}

MtpDrafter::MtpDrafter(WorkerGroup& workers) : workers_(workers) {
    if (workers_.mtp_layers() < 1)
        bad_input(
            "--speculative mtp: the model was loaded without its MTP layers "
            "(num_nextn_predict_layers is {}); load it with them or use --speculative ngram",
            workers_.config().num_nextn_predict_layers);
}

namespace {

int64_t slot_of(const std::vector<BlockId>& table, int64_t pos, int64_t bs) {
    return static_cast<int64_t>(table[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
}

}  // namespace

void MtpDrafter::after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& built,
                            const std::vector<float>& hidden,
                            const std::vector<SeqOutcome>& outcomes) {
    const int64_t width = workers_.config().hidden_size, vocab = workers_.config().vocab_size;
    const int64_t bs = workers_.options().kv_block_size;
    const StepInput& target = built.input;
    MYRIAD_CHECK(static_cast<int64_t>(hidden.size()) == target.num_tokens() * width,
                 "the MTP drafter got {} hidden values for a step of {} rows", hidden.size(),
                 target.num_tokens());
    std::map<const Sequence*, FinishReason> finish;
    for (const SeqOutcome& o : outcomes) finish[o.seq] = o.finish;

    // Each sequence's positions the target computed in this step (and kept): [before, end),
    // each with the token after it known.
    StepInput st;
    st.eager = true;
    std::vector<float> in;
    std::vector<Sequence*> drafting;
    for (size_t i = 0; i < batch.size(); ++i) {
        Sequence& seq = *batch[i].seq;
        const SeqSlice& rows = target.seqs[i];
        const int64_t before = target.positions[static_cast<size_t>(rows.q_begin)];
        const int64_t end = std::min(seq.num_computed, static_cast<int64_t>(seq.tokens.size()) - 1);
        ready_.erase(seq.id);
        if (end <= before) continue;
        SeqSlice s;
        s.q_begin = st.num_tokens();
        s.q_len = end - before;
        s.ctx_len = end;
        s.block_table = seq.blocks;
        for (int64_t p = before; p < end; ++p) {
            st.token_ids.push_back(seq.tokens[static_cast<size_t>(p + 1)]);
            st.positions.push_back(static_cast<int32_t>(p));
            st.slots.push_back(slot_of(seq.blocks, p, bs));
            const float* h =
                hidden.data() + static_cast<size_t>((rows.q_begin + p - before) * width);
            in.insert(in.end(), h, h + width);
        }
        st.seqs.push_back(std::move(s));
        const auto f = finish.find(&seq);
        const bool goes_on = f != finish.end() && f->second == FinishReason::None;
        if (goes_on && seq.decoding() && end == static_cast<int64_t>(seq.tokens.size()) - 1) {
            st.logit_rows.push_back(static_cast<int32_t>(st.num_tokens() - 1));
            drafting.push_back(&seq);
        }
    }
    if (st.seqs.empty()) return;
    logits_.resize(st.logit_rows.size() * static_cast<size_t>(vocab));
    out_.resize(st.logit_rows.size() * static_cast<size_t>(width));
    workers_.mtp_step(st, in.data(), logits_.data(), out_.data());
    for (size_t j = 0; j < drafting.size(); ++j) {
        Ready r;
        r.length = static_cast<int64_t>(drafting[j]->tokens.size());
        r.token = argmax_token(logits_.data() + j * static_cast<size_t>(vocab), vocab);
        r.hidden.assign(out_.begin() + static_cast<std::ptrdiff_t>(j * width),
                        out_.begin() + static_cast<std::ptrdiff_t>((j + 1) * width));
        ready_[drafting[j]->id] = std::move(r);
    }
}

void MtpDrafter::propose(const std::vector<Sequence*>& seqs) {
    const int64_t width = workers_.config().hidden_size, vocab = workers_.config().vocab_size;
    const int64_t bs = workers_.options().kv_block_size;
    const int64_t spare_end = workers_.mtp_spare_begin() + workers_.options().mtp_spare_blocks;
    std::map<uint64_t, Ready> ready;
    ready.swap(ready_);  // drafts of sequences not asked for now are stale by the next step

    // The chain: sequence c's next row is at position pos[c], after its draft so far, with the
    // MTP layer's last output as its hidden state; its block table covers `len[c]` rows.
    struct Chain {
        Sequence* seq;
        std::vector<BlockId> table;
        int64_t limit;  // draft tokens it may take
        std::vector<float> hidden;
    };
    std::vector<Chain> chains;
    BlockId next_spare = static_cast<BlockId>(workers_.mtp_spare_begin());
    for (Sequence* seq : seqs) {
        seq->draft.clear();
        auto it = ready.find(seq->id);
        if (it == ready.end() || it->second.length != static_cast<int64_t>(seq->tokens.size()) ||
            seq->draft_limit < 1)
            continue;
        seq->draft.push_back(it->second.token);
        if (seq->draft_limit < 2) continue;
        // Chained rows at positions n - 1 .. n + limit - 3 (n tokens): spare blocks past the
        // sequence's own, while there are any.
        Chain c{seq, seq->blocks, seq->draft_limit, std::move(it->second.hidden)};
        const int64_t n = static_cast<int64_t>(seq->tokens.size());
        while (static_cast<int64_t>(c.table.size()) * bs < n + c.limit - 2 &&
               next_spare < spare_end)
            c.table.push_back(next_spare++);
        c.limit = std::min(c.limit, static_cast<int64_t>(c.table.size()) * bs - n + 2);
        if (c.limit >= 2) chains.push_back(std::move(c));
    }
    for (int64_t j = 1; !chains.empty(); ++j) {
        StepInput st;
        st.eager = true;
        std::vector<float> in;
        for (const Chain& c : chains) {
            const int64_t pos = static_cast<int64_t>(c.seq->tokens.size()) - 2 + j;
            SeqSlice s;
            s.q_begin = st.num_tokens();
            s.q_len = 1;
            s.ctx_len = pos + 1;
            s.block_table = c.table;
            st.token_ids.push_back(c.seq->draft.back());
            st.positions.push_back(static_cast<int32_t>(pos));
            st.slots.push_back(slot_of(c.table, pos, bs));
            st.logit_rows.push_back(static_cast<int32_t>(s.q_begin));
            st.seqs.push_back(std::move(s));
            in.insert(in.end(), c.hidden.begin(), c.hidden.end());
        }
        logits_.resize(chains.size() * static_cast<size_t>(vocab));
        out_.resize(chains.size() * static_cast<size_t>(width));
        workers_.mtp_step(st, in.data(), logits_.data(), out_.data());
        std::vector<Chain> next;
        for (size_t i = 0; i < chains.size(); ++i) {
            Chain& c = chains[i];
            c.seq->draft.push_back(
                argmax_token(logits_.data() + i * static_cast<size_t>(vocab), vocab));
            if (static_cast<int64_t>(c.seq->draft.size()) >= c.limit) continue;
            c.hidden.assign(out_.begin() + static_cast<std::ptrdiff_t>(i * width),
                            out_.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
            next.push_back(std::move(c));
        }
        chains.swap(next);
    }
}

}  // namespace myriad
