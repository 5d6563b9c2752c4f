#include "api/server_state.h"

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

double ServerState::seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool ServerState::try_admit(int64_t seqs) {
    const int64_t limit = options_.max_num_seqs + options_.max_queue;
    int64_t cur = in_flight_.load();
    do {
        if (cur + seqs > limit) return false;
    } while (!in_flight_.compare_exchange_weak(cur, cur + seqs));
    return true;
}

void ServerState::release(int64_t seqs) {
    in_flight_ -= seqs;
}

}  // namespace myriad::api
