#include "api/server_state.h"

#include "grammar/vocabulary.h"

namespace myriad::api {

void ServerState::set_phase(std::string phase) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = std::move(phase);
}

std::string ServerState::phase() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return phase_;
}

void ServerState::set_ready(LoadedServerModel model) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        model_ = model;
        phase_ = "ready";
    }
    ready_ = true;  // publishes model_ to the handler threads
}

std::shared_ptr<const grammar::Vocabulary> ServerState::grammar_vocabulary(
    const std::vector<TokenId>& markers) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!grammar_vocab_)
        grammar_vocab_ =
            grammar::Vocabulary::from_tokenizer(*model_.tokenizer, model_.eos_ids, markers);
    return grammar_vocab_;
}

double ServerState::seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Admission ServerState::try_admit(int64_t seqs) {
    const int64_t limit = options_.max_num_seqs + options_.max_queue;
    int64_t cur = in_flight_.load();
    do {
        if (seqs <= 0 || cur + seqs > limit) return {};
    } while (!in_flight_.compare_exchange_weak(cur, cur + seqs));
    return Admission(this, seqs);
}

Admission& Admission::operator=(Admission&& o) noexcept {
    if (this != &o) {
        if (seqs_ > 0) state_->release(seqs_);
        state_ = o.state_;
        seqs_ = o.seqs_;
        o.seqs_ = 0;
    }
    return *this;
}

Admission::~Admission() {
    if (seqs_ > 0) state_->release(seqs_);
}

}  // namespace myriad::api
