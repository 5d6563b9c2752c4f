#include "engine/request.h"

namespace myriad {

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        case FinishReason::Abort:
            return "abort";
        case FinishReason::Error:
            return "error";
        case FinishReason::None:
            break;
    }
    return "none";
}

void RequestHandle::push(RequestOutput out) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(out));
    }
    cv_.notify_all();
}

bool RequestHandle::next(RequestOutput& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (final_taken_) return false;
    cv_.wait(lock, [&] { return !queue_.empty(); });
    out = std::move(queue_.front());
    queue_.pop_front();
    if (out.finished) final_taken_ = true;
    return true;
}

bool RequestHandle::try_next(RequestOutput& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (final_taken_ || queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    if (out.finished) final_taken_ = true;
    return true;
}

}  // namespace myriad
