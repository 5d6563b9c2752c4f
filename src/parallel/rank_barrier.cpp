#include "parallel/rank_barrier.h"

#include <cstdlib>

#include <fmt/format.h>

#include "util/error.h"

namespace myriad {

std::chrono::milliseconds collective_timeout() {
    const char* v = std::getenv("MYRIAD_COLLECTIVE_TIMEOUT");
    double s = 300.0;
    if (v && *v) {
        char* end = nullptr;
        const double parsed = std::strtod(v, &end);
        if (end && *end == '\0' && parsed > 0) s = parsed;
    }
    return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

RankBarrier::RankBarrier(int world, std::chrono::milliseconds bound)
    : world_(world), bound_(bound) {
    MYRIAD_CHECK(world >= 1, "communicator world size {} must be at least 1", world);
}

void RankBarrier::arrive_and_wait(int rank, const char* op) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) internal_error("rank {}: {} abandoned: {}", rank, op, why_);
    const uint64_t gen = generation_;
    if (++arrived_ == world_) {
        arrived_ = 0;
        ++generation_;
        cv_.notify_all();
        return;
    }
    cv_.wait_for(lock, bound_, [&] { return generation_ != gen || aborted_; });
    if (generation_ != gen) return;
    if (aborted_) internal_error("rank {}: {} abandoned: {}", rank, op, why_);
    aborted_ = true;
    why_ = fmt::format("rank {} waited over {} s in {} for the other ranks", rank,
                       bound_.count() / 1000.0, op);
    cv_.notify_all();
    internal_error("{} (MYRIAD_COLLECTIVE_TIMEOUT sets the bound)", why_);
}

void RankBarrier::abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) why_ = why;
    aborted_ = true;
    cv_.notify_all();
}

void RankBarrier::reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = false;
    why_.clear();
    arrived_ = 0;
    ++generation_;
}

}  // namespace myriad
