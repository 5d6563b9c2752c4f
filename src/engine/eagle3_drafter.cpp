#include "engine/eagle3_drafter.h"

#include <algorithm>

#include "engine/mtp_drafter.h"
#include "engine/step_update.h"
#include "engine/worker_group.h"
#include "model/weights.h"
#include "util/error.h"

namespace myriad {

namespace {

// A sequence not seen by this many steps (a request cancelled before its step) loses its cache.
constexpr uint64_t kForgetAfterSteps = 1024;

}  // namespace

Eagle3Drafter::Eagle3Drafter(WorkerGroup& workers, const std::string& dir) : workers_(workers) {
    if (dir.empty())
        bad_input(
            "--speculative eagle3 needs --draft-model DIR (an EAGLE3 draft checkpoint "
            "folder made for this model)");
    const ModelConfig& target = workers_.config();
    Eagle3Config config = read_eagle3_config(dir);
    check_eagle3_target(config, target);
    aux_layers_ = eagle3_aux_layers(config, target.num_hidden_layers);
    checkpoint_ = Checkpoint::open(dir);
    if (checkpoint_.gguf())
        bad_input("--draft-model {}: an EAGLE3 draft is a folder of safetensors files", dir);
    // Without its own embed_tokens the draft shares the target's (a safetensors checkpoint's).
    const Checkpoint& tc = workers_.checkpoint();
    const std::string embed = text_model_prefix(target, tc) + "model.embed_tokens.weight";
    std::optional<TensorView> target_embed;
    if (!tc.gguf() && tc.synthetic_seed() == 0 && tc.has(embed)) target_embed = tc.get(embed);
    Eagle3Weights w =
        load_eagle3_weights(config, checkpoint_, target_embed ? &*target_embed : nullptr);
    if (w.num_aux != static_cast<int64_t>(aux_layers_.size()))
        bad_input(
            "{}: tensor fc.weight takes {} hidden states of the target, but {} names {} "
            "layers (eagle_aux_hidden_state_layer_ids, default 2, L/2, L-3)",
            dir, w.num_aux, config.file, aux_layers_.size());
    draft_ = std::make_unique<Eagle3Draft>(std::move(config), std::move(w));
}

TokenId Eagle3Drafter::pick(const float* logits) const {
    return static_cast<TokenId>(
        draft_->to_target(argmax_token(logits, draft_->config().draft_vocab_size)));
}

void Eagle3Drafter::after_step(const std::vector<ScheduledSeq>& batch, const BuiltStep& built,
                               const std::vector<float>& hidden,
                               const std::vector<SeqOutcome>& outcomes) {
    ++steps_;
    const int64_t width = draft_->aux_width(), H = draft_->config().hidden_size;
    const int64_t vd = draft_->config().draft_vocab_size;
    const StepInput& target = built.input;
    MYRIAD_CHECK(static_cast<int64_t>(hidden.size()) == target.num_tokens() * width,
                 "the EAGLE3 drafter got {} hidden values for a step of {} rows of {}",
                 hidden.size(), target.num_tokens(), width);
    std::map<const Sequence*, FinishReason> finish;
    for (const SeqOutcome& o : outcomes) finish[o.seq] = o.finish;
    logits_.resize(static_cast<size_t>(vd));
    for (size_t i = 0; i < batch.size(); ++i) {
        Sequence& seq = *batch[i].seq;
        ready_.erase(seq.id);
        const auto f = finish.find(&seq);
        if (f != finish.end() && f->second != FinishReason::None) {
            seqs_.erase(seq.id);  // it leaves after this step
            continue;
        }
        // The positions the target computed in this step (and kept): [before, end), each with
        // the token after it known.
        const SeqSlice& rows = target.seqs[i];
        const int64_t before = target.positions[static_cast<size_t>(rows.q_begin)];
        const int64_t end = std::min(seq.num_computed, static_cast<int64_t>(seq.tokens.size()) - 1);
        if (end <= before) continue;
        SeqState& s = seqs_[seq.id];
        s.seen = steps_;
        if (before < s.cache.start || before > s.cache.length) s.cache = {{}, {}, before, before};
        std::vector<int32_t> next(seq.tokens.begin() + before + 1, seq.tokens.begin() + end + 1);
        const bool goes_on = f != finish.end() && seq.decoding() &&
                             end == static_cast<int64_t>(seq.tokens.size()) - 1;
        const int64_t n = end - before;
        out_.resize(static_cast<size_t>(n * H));
        draft_->forward(s.cache, before, next, hidden.data() + rows.q_begin * width, true,
                        out_.data(), goes_on ? n - 1 : n, logits_.data());
        if (!goes_on) continue;
        Ready r;
        r.length = static_cast<int64_t>(seq.tokens.size());
        r.token = pick(logits_.data());
        r.hidden.assign(out_.end() - H, out_.end());
        ready_[seq.id] = std::move(r);
    }
    for (auto it = seqs_.begin(); it != seqs_.end();)
        it = steps_ - it->second.seen > kForgetAfterSteps ? seqs_.erase(it) : std::next(it);
}

void Eagle3Drafter::propose(const std::vector<Sequence*>& seqs) {
    const int64_t H = draft_->config().hidden_size;
    std::map<uint64_t, Ready> ready;
    ready.swap(ready_);  // drafts of sequences not asked for now are stale by the next step
    std::vector<float> out(static_cast<size_t>(H));
    logits_.resize(static_cast<size_t>(draft_->config().draft_vocab_size));
    for (Sequence* seq : seqs) {
        seq->draft.clear();
        auto it = ready.find(seq->id);
        auto st = seqs_.find(seq->id);
        if (it == ready.end() || st == seqs_.end() ||
            it->second.length != static_cast<int64_t>(seq->tokens.size()) || seq->draft_limit < 1)
            continue;
        seq->draft.push_back(it->second.token);
        // Chained rows at positions n - 1, n, ...: the token drafted last with the row's output.
        std::vector<float> h = std::move(it->second.hidden);
        const int64_t n = static_cast<int64_t>(seq->tokens.size());
        for (int64_t j = 1; j < seq->draft_limit; ++j) {
            const int64_t pos = n - 2 + j;
            if (pos > st->second.cache.length) break;
            draft_->forward(st->second.cache, pos, {seq->draft.back()}, h.data(), false, out.data(),
                            0, logits_.data());
            seq->draft.push_back(pick(logits_.data()));
            h = out;
        }
    }
}

}  // namespace myriad
