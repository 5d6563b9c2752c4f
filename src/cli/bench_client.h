// One streaming request to an OpenAI-compatible server for `myriad bench`, timed per token: POST
// /v1/completions or /v1/chat/completions with stream=true, the SSE events read as they arrive.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace myriad::cli {

struct StreamTiming {
    bool ok = false;
    std::string error;        // HTTP status and message, or the transport error
    double ttft_s = 0;        // request sent -> first token text
    double latency_s = 0;     // request sent -> end of the stream
    std::vector<double> itl;  // gaps between successive chunks carrying text (seconds)
    int64_t chunks = 0;       // chunks carrying text
    int64_t prompt_tokens = 0, completion_tokens = 0;  // from usage when the server sends it
};

// Sends `body` (a JSON request with "stream": true) to `url` (the full endpoint URL).
StreamTiming stream_request(const std::string& url, const nlohmann::json& body,
                            const std::string& api_key, double timeout_s);

// Parses the SSE bytes of a stream into `t` as they come; `now` stamps each event. Exposed for
// tests: any split of the same bytes gives the same result.
class SseTimer {
  public:
    SseTimer(StreamTiming& t, std::chrono::steady_clock::time_point start) : t_(t), start_(start) {}
    void feed(std::string_view bytes, std::chrono::steady_clock::time_point now);
    bool done() const { return done_; }

  private:
    void event(std::string_view data, std::chrono::steady_clock::time_point now);
    StreamTiming& t_;
    std::chrono::steady_clock::time_point start_, last_;
    std::string buf_;
    bool done_ = false, first_ = true;
};

}  // namespace myriad::cli
