// Progress of a long transfer: a bar redrawn in place (bytes, rate, ETA) when its stream (stdout
// unless told) is a terminal, else a plain line every few seconds (MYRIAD_PROGRESS_INTERVAL,
// default 10) so logs stay readable. Thread-safe: workers call add() as bytes arrive. `status`,
// when set, is told each line as it is printed (serve: sd_notify STATUS=).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace myriad {

class Progress {
  public:
    // `done` bytes are already there (resumed); `total` is everything.
    Progress(std::string label, int64_t total, int64_t done, std::FILE* out = stdout,
             std::function<void(const std::string&)> status = {});
    ~Progress();  // stops the printer and prints the final line
    void add(int64_t bytes) { done_ += bytes; }
    // One line of its own (a finished file), printed above the bar.
    void note(const std::string& line);

  private:
    void run();
    std::string line() const;
    void print(bool final);

    std::string label_;
    int64_t total_, start_done_;
    std::FILE* out_;
    std::function<void(const std::string&)> status_;
    std::atomic<int64_t> done_;
    bool tty_;
    double interval_s_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

// "1.5 GB", "12.0 MB" (powers of 10).
std::string human_size(double bytes);
// "1h02m", "3m05s", "12s".
std::string human_duration(double seconds);

}  // namespace myriad
