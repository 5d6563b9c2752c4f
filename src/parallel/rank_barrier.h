// The meeting point of the ranks of one process: every rank's collective waits here for the
// others. A wait longer than the bound, or a rank that failed (abort), makes every waiting rank
// throw naming itself and the collective, so a failing or hung rank never hangs the process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace myriad {

// The bound of one wait: MYRIAD_COLLECTIVE_TIMEOUT seconds, 300 by default.
std::chrono::milliseconds collective_timeout();

class RankBarrier {
  public:
    RankBarrier(int world, std::chrono::milliseconds bound);
    // Returns when all `world` ranks arrived; throws (internal error) after the bound or abort.
    void arrive_and_wait(int rank, const char* op);
    // A rank failed: the waiting ranks and every later arrival throw, until reset().
    void abort(const std::string& why);
    // Every rank has left its step: the next collective starts afresh.
    void reset();

  private:
    int world_;
    std::chrono::milliseconds bound_;
    std::mutex mutex_;
    std::condition_variable cv_;
    int arrived_ = 0;
    uint64_t generation_ = 0;
    bool aborted_ = false;
    std::string why_;
};

}  // namespace myriad
