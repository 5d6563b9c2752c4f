#include "engine/step_builder.h"

#include <algorithm>
#include <span>

#include "engine/sampler.h"
#include "util/error.h"

namespace myriad {

std::vector<TokenId> output_with_draft(const Sequence& seq, int64_t i) {
    std::vector<TokenId> out = seq.output();
    out.insert(out.end(), seq.draft.begin(), seq.draft.begin() + i);
    return out;
}

namespace {

// Tokens left to the output at draft row i (this one included).
int64_t remaining_at(const Sequence& seq, int64_t i, int64_t max_model_len) {
    return std::min(seq.params.max_tokens - seq.num_output() - i,
                    max_model_len - static_cast<int64_t>(seq.tokens.size()) - i);
}

// Appends row i's mask to `sampling` when the sequence's processor (advanced past i draft
// tokens) masks it; its index in the masks, or -1.
int32_t add_mask(Sequence& seq, int64_t i, const StepLimits& limits, StepSampling& sampling) {
    const int64_t remaining = remaining_at(seq, i, limits.max_model_len);
    if (seq.processor.forced(seq.num_output() + i) >= 0 || !seq.processor.masks_next(remaining))
        return -1;
    sampling.mask_words = static_cast<int32_t>((limits.vocab + 31) / 32);
    const size_t at = sampling.masks.size();
    sampling.masks.resize(at + static_cast<size_t>(sampling.mask_words));
    seq.processor.fill_mask(
        std::span<uint32_t>(sampling.masks.data() + at, sampling.masks.size() - at), remaining);
    return static_cast<int32_t>(at / static_cast<size_t>(sampling.mask_words));
}

bool allows(const StepSampling& sampling, int32_t mask, TokenId t) {
    if (mask < 0) return true;
    const uint32_t* m = sampling.masks.data() +
                        static_cast<size_t>(mask) * static_cast<size_t>(sampling.mask_words);
    return (m[t >> 5] >> (t & 31)) & 1u;
}

// The masks of a sampled sequence's rows, its draft cut before the first token the grammar
// refuses (or after one that ends the document: nothing may follow it). The processor is
// left as it was.
void mask_rows(ScheduledSeq& s, const StepLimits& limits, BuiltStep& b,
               std::vector<int32_t>& row_mask) {
    Sequence& seq = *s.seq;
    size_t tried = 0;
    for (int64_t i = 0;; ++i) {
        const int32_t m = add_mask(seq, i, limits, b.sampling);
        row_mask.push_back(m);
        if (i == s.draft) break;
        const TokenId t = seq.draft[static_cast<size_t>(i)];
        bool cut = !allows(b.sampling, m, t);
        if (!cut) {
            const TokenProcessor::Verdict v = seq.processor.accept(t, seq.num_output() + i);
            ++tried;
            cut = v != TokenProcessor::Verdict::Continue;
            if (cut && v == TokenProcessor::Verdict::Complete) {
                ++i;  // the draft may end with it; the row after it is not sampled from
                row_mask.push_back(-1);
            }
        }
        if (cut) {
            s.draft = i;
            break;
        }
    }
    seq.processor.rollback(tried);
    if (static_cast<int64_t>(seq.draft.size()) == s.draft) return;
    seq.draft.resize(static_cast<size_t>(s.draft));
    s.num_tokens = 1 + s.draft;
}

// Pads every sequence's draft to the longest of the step (ScheduledSeq::pad) where all of them
// decode, some verify a draft, not all of the same length, and the rows and blocks allow it.
void pad_drafts(std::vector<ScheduledSeq>& batch, const StepLimits& limits) {
    int64_t longest = 0, shortest = INT64_MAX;
    for (const ScheduledSeq& s : batch) {
        if (!s.sample || s.num_tokens != 1 + s.draft || !s.seq->decoding()) return;
        longest = std::max(longest, s.draft);
        shortest = std::min(shortest, s.draft);
    }
    if (longest == 0 || shortest == longest) return;
    const int64_t bs = limits.block_size;
    int64_t rows = 0, blocks = 0;
    for (const ScheduledSeq& s : batch) {
        const int64_t tokens = s.seq->num_computed + 1 + longest;
        rows += 1 + longest;
        blocks += std::max<int64_t>(
            0, (tokens + bs - 1) / bs - static_cast<int64_t>(s.seq->blocks.size()));
    }
    if (rows > limits.max_rows || blocks > limits.free_blocks()) return;
    // The count said the blocks are there; should a table still not grow, the sequences padded
    // so far stay padded (each is whole: grow takes all of its blocks or none) and the rest run
    // as they are. The step then has mixed lengths and runs op by op: slower, never wrong.
    for (ScheduledSeq& s : batch) {
        if (s.draft == longest) continue;
        if (!limits.grow(*s.seq, s.seq->num_computed + 1 + longest)) return;
        s.pad = longest - s.draft;
        s.num_tokens = 1 + longest;
    }
}

}  // namespace

BuiltStep build_step(std::vector<ScheduledSeq>& batch, const StepLimits& limits) {
    BuiltStep b;
    StepInput& st = b.input;
    // Structured output first: it may cut drafts, and so the rows; then the padding.
    std::vector<std::vector<int32_t>> masks(batch.size());
    for (size_t i = 0; i < batch.size(); ++i)
        if (batch[i].sample) mask_rows(batch[i], limits, b, masks[i]);
    if (limits.pad_drafts) pad_drafts(batch, limits);
    for (size_t i = 0; i < batch.size(); ++i) {
        b.row_mask.insert(b.row_mask.end(), masks[i].begin(), masks[i].end());
        b.row_mask.insert(b.row_mask.end(), static_cast<size_t>(batch[i].pad), -1);
    }

    const int64_t vocab = limits.vocab, bs = limits.block_size;
    for (const ScheduledSeq& s : batch) {
        Sequence& seq = *s.seq;
        SeqSlice slice;
        slice.q_begin = st.num_tokens();
        slice.q_len = s.num_tokens;
        slice.ctx_len = seq.num_computed + s.num_tokens;
        slice.block_table = seq.blocks;
        slice.draft = s.draft + s.pad;
        st.seqs.push_back(std::move(slice));
        if (seq.wants_prompt_logprobs()) {
            // Position p's logits give the logprob of prompt token p + 1; the prefix cache
            // skipped no position still without one (cacheable_tokens).
            const int64_t begin = std::max(seq.num_computed, seq.prompt_logprobs_done);
            const int64_t end = std::min(seq.num_computed + s.num_tokens, seq.prompt_len - 1);
            MYRIAD_CHECK(begin == seq.prompt_logprobs_done,
                         "sequence {} computes from position {}, its prompt logprobs reach {}",
                         seq.id, seq.num_computed, seq.prompt_logprobs_done);
            if (begin < end) {
                st.logprob_spans.push_back(
                    {st.seqs.back().q_begin + begin - seq.num_computed, end - begin});
                for (int64_t p = begin; p < end; ++p)
                    st.logprob_targets.push_back(seq.tokens[p + 1]);
                st.logprob_top_n = std::max(st.logprob_top_n, seq.params.prompt_logprobs);
                b.logprob_seqs.emplace_back(&seq, end - begin);
            }
        }
        const int64_t q_begin = st.seqs.back().q_begin;
        for (int64_t i = 0; i < s.num_tokens; ++i) {
            const int64_t pos = seq.num_computed + i;
            const int64_t known = static_cast<int64_t>(seq.tokens.size());
            const int64_t d = pos - known;  // a draft row (or padding past the draft)
            st.token_ids.push_back(d < 0         ? seq.tokens[pos]
                                   : d < s.draft ? seq.draft[static_cast<size_t>(d)]
                                   : s.draft > 0 ? seq.draft[static_cast<size_t>(s.draft - 1)]
                                                 : seq.tokens.back());
            st.positions.push_back(static_cast<int32_t>(pos));
            st.slots.push_back(
                static_cast<int64_t>(seq.blocks[static_cast<size_t>(pos / bs)]) * bs + pos % bs);
        }
        if (s.sample) {
            b.first_row.push_back(static_cast<int32_t>(st.logit_rows.size()));
            for (int64_t i = s.num_tokens - 1 - s.draft - s.pad; i < s.num_tokens; ++i)
                st.logit_rows.push_back(static_cast<int32_t>(q_begin + i));
        }
    }
    if (!limits.backend_samples) return b;
    // Where the backend samples (a GPU), the rows go down as StepSampling and only token ids
    // come back; rows that need their logits here (logprobs, forced tokens, an observer) are
    // marked host and sampled as on the CPU.
    size_t row = 0;
    for (const ScheduledSeq& s : batch) {
        if (!s.sample) continue;
        const Sequence& seq = *s.seq;
        for (int64_t i = 0; i <= s.draft + s.pad; ++i, ++row) {
            const int64_t generated = seq.num_output() + i;
            if (i > s.draft) {  // padding: drawn on the device with no edits, then dropped
                SampleRow r = sample_row(seq.params, seq.seed, generated);
                r.host = false;
                r.mask = -1;
                r.edits_begin = r.edits_end = static_cast<int32_t>(b.sampling.edits.size());
                b.sampling.rows.push_back(r);
                continue;
            }
            const bool host = limits.observe_logits || seq.params.top_logprobs >= 0 ||
                              seq.processor.forced(generated) >= 0;
            SampleRow r = sample_row(seq.params, seq.seed, generated);
            r.host = host;
            r.mask = b.row_mask[row];
            r.edits_begin = static_cast<int32_t>(b.sampling.edits.size());
            if (!host)
                append_logit_edits(seq.params, vocab, seq.prompt(),
                                   i == 0 ? seq.output() : output_with_draft(seq, i), seq.stop_ids,
                                   b.sampling.edits);
            r.edits_end = static_cast<int32_t>(b.sampling.edits.size());
            b.sampling.rows.push_back(r);
        }
    }
    return b;
}

}  // namespace myriad
