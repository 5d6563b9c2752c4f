// A fixed pool of worker threads for data-parallel loops on the CPU backend.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace myriad {

class ThreadPool {
  public:
    // `threads` = total workers including the caller; 1 runs everything inline.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int threads() const { return static_cast<int>(workers_.size()) + 1; }
    // Calls fn(begin, end) over disjoint chunks covering [0, n); returns when all are done.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  private:
    void worker_loop(int index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t job_n_ = 0;
    uint64_t generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
};

// Threads the machine offers (hardware_concurrency, at least 1).
int hardware_threads();

}  // namespace myriad
