// A submitted request as its caller sees it: a handle whose output queue another thread drains,
// and that can cancel the request (the engine drops it at its next step).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace myriad {

enum class FinishReason : uint8_t { None, Stop, Length, Abort, Error };
const char* finish_reason_name(FinishReason r);

struct RequestOutput {
    std::vector<TokenId> tokens;         // tokens new since the previous output
    std::vector<SampleResult> logprobs;  // one per token when logprobs were asked
    // With the first token when prompt logprobs were asked: prompt tokens 1, 2, ... (the first
    // has none), each with its logprob and the top N at its position.
    std::vector<SampleResult> prompt_logprobs;
    bool finished = false;
    FinishReason reason = FinishReason::None;
    TokenId stop_token = -1;  // the stop token that ended it (also the last of `tokens`)
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;      // prompt tokens served from the prefix cache
    int64_t completion_tokens = 0;  // generated so far
    std::string error;
};

class RequestHandle {
  public:
    explicit RequestHandle(uint64_t id) : id_(id) {}
    uint64_t id() const { return id_; }
    // Blocks until an output is queued; false once the final output was taken.
    bool next(RequestOutput& out);
    // Non-blocking form: false when nothing is queued now.
    bool try_next(RequestOutput& out);
    // Asks the engine to stop this request at its next step; its blocks are freed then.
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }
    // Back-pressure: while paused the engine does not schedule the request (it keeps its
    // blocks); its client is not taking the output it has.
    void pause(bool on) { paused_ = on; }
    bool paused() const { return paused_; }

    // Engine side.
    void push(RequestOutput out);

  private:
    uint64_t id_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<RequestOutput> queue_;
    bool final_taken_ = false;
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> paused_{false};
};

}  // namespace myriad
