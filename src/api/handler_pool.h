// The threads that run request handlers, which block (a generation holds its thread until the
// last token): never the event loop's. Two classes of work share them: requests that need the
// model take at most `requests` threads, and probes (/health, /metrics, /v1/models) a few more,
// so a probe finds a thread however busy the server is. Threads start as work needs them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace myriad::api {

class HandlerPool {
  public:
    HandlerPool(size_t requests, size_t probes);
    // Runs the jobs already taken, then joins every thread.
    ~HandlerPool();
    HandlerPool(const HandlerPool&) = delete;
    HandlerPool& operator=(const HandlerPool&) = delete;

    // Queues `job` on a thread of its class; false (nothing queued) when that class already has
    // as many jobs as threads.
    bool try_run(std::function<void()> job, bool probe);

  private:
    struct Job {
        std::function<void()> fn;
        bool probe;
    };
    void work();

    const size_t max_requests_, max_probes_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    std::vector<std::thread> threads_;
    size_t requests_ = 0, probes_ = 0;  // jobs taken (queued or running) per class
    size_t idle_ = 0;                   // threads waiting for a job
    bool stop_ = false;
};

}  // namespace myriad::api
