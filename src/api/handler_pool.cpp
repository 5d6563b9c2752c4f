#include "api/handler_pool.h"

namespace myriad::api {

HandlerPool::HandlerPool(size_t requests, size_t probes)
    : max_requests_(requests), max_probes_(probes) {}

HandlerPool::~HandlerPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
}

bool HandlerPool::try_run(std::function<void()> job, bool probe) {
    std::unique_lock<std::mutex> lock(mutex_);
    size_t& taken = probe ? probes_ : requests_;
    if (stop_ || taken >= (probe ? max_probes_ : max_requests_)) return false;
    ++taken;
    queue_.push_back({std::move(job), probe});
    // Every taken job has a thread: one idle thread per queued job, or a new one.
    if (idle_ >= queue_.size()) {
        lock.unlock();
        cv_.notify_one();
    } else {
        threads_.emplace_back([this] { work(); });
    }
    return true;
}

void HandlerPool::work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        ++idle_;
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) return;  // stopping, nothing left
        Job job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        job.fn();
        job.fn = nullptr;  // what the job holds goes before the slot is given back
        lock.lock();
        --(job.probe ? probes_ : requests_);
    }
}

}  // namespace myriad::api
