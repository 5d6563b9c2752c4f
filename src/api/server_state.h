// What every handler shares: the options, the loaded model (once it is), the admission count
// that turns requests away with 429 past max-num-seqs + max-queue, the drain flag, metrics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/responses_store.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace myriad::grammar {
class Vocabulary;
}

namespace myriad::api {

class PromptRenderer;
class ServerState;

// Admitted sequences, given back when the guard goes (every path: success, error, exception).
class Admission {
  public:
    Admission() = default;
    Admission(ServerState* state, int64_t seqs) : state_(state), seqs_(seqs) {}
    Admission(Admission&& o) noexcept : state_(o.state_), seqs_(o.seqs_) { o.seqs_ = 0; }
    Admission& operator=(Admission&& o) noexcept;
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    explicit operator bool() const { return seqs_ > 0; }

  private:
    ServerState* state_ = nullptr;
    int64_t seqs_ = 0;
};

struct ServerOptions {
    std::string served_model_name;
    std::string model_type;  // config.json model_type: picks the parsers and template
    int64_t max_num_seqs = 64;
    int64_t max_queue = 256;
    size_t max_request_bytes = size_t{32} << 20;
    size_t max_unsent_bytes = size_t{1} << 20;  // a stream's unread output before it pauses
    double stream_write_timeout = 30;           // seconds a stream's client may read nothing
    double request_read_timeout = 30;           // seconds to send a whole request
    int64_t max_connections = 0;                // open connections; 0: sized from the above
    std::string api_key;
    std::string tool_call_parser;     // "" = from model_type
    std::string reasoning_parser;     // "" = from model_type
    std::string chat_template;        // --chat-template text, "" = the model's
    bool enable_test_output = false;  // test facility: requests may carry `test_output`
    size_t responses_store = 1000;    // --responses-store: stored Responses API replies
};

// The model as the handlers use it; set once loading finished.
struct LoadedServerModel {
    Engine* engine = nullptr;
    const Tokenizer* tokenizer = nullptr;
    const PromptRenderer* renderer = nullptr;
    std::vector<TokenId> eos_ids;
    int64_t max_model_len = 0;
};

class ServerState {
  public:
    explicit ServerState(ServerOptions options)
        : options_(std::move(options)),
          auth_(options_.api_key),
          responses_(options_.responses_store) {}

    const ServerOptions& options() const { return options_; }
    const Auth& auth() const { return auth_; }
    Metrics& metrics() { return metrics_; }
    ResponsesStore& responses() { return responses_; }

    // Loading: a phase for /health until ready.
    void set_phase(std::string phase);
    std::string phase() const;
    void set_ready(LoadedServerModel model);
    bool ready() const { return ready_.load(); }
    const LoadedServerModel& model() const { return model_; }
    // The model's vocabulary as structured output's grammars see it, built on first use with
    // `markers` spelled as special tokens (api/structured_output.h: always the same list).
    std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(
        const std::vector<TokenId>& markers) const;
    double seconds_since_start() const;
    // When the server started, in Unix seconds (`created` of GET /v1/models).
    int64_t started_at() const { return started_at_; }

    // Admission of `seqs` (> 0) sequences, held until the guard is destroyed; an empty guard
    // (nothing taken) past max-num-seqs + max-queue.
    Admission try_admit(int64_t seqs);
    int64_t in_flight() const { return in_flight_.load(); }

    // SIGTERM: new requests get 503; with cancel set, running ones stop at their next token.
    void start_draining() { draining_ = true; }
    bool draining() const { return draining_.load(); }
    void cancel_all() { cancel_all_ = true; }
    bool cancelling() const { return cancel_all_.load(); }

  private:
    friend class Admission;
    void release(int64_t seqs) { in_flight_ -= seqs; }

    ServerOptions options_;
    Auth auth_;
    Metrics metrics_;
    ResponsesStore responses_;
    mutable std::mutex mutex_;
    std::string phase_ = "starting";
    std::atomic<bool> ready_{false};
    LoadedServerModel model_;
    mutable std::shared_ptr<const grammar::Vocabulary> grammar_vocab_;
    std::atomic<int64_t> in_flight_{0};
    std::atomic<bool> draining_{false}, cancel_all_{false};
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    int64_t started_at_ = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
};

}  // namespace myriad::api
