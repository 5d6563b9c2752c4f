// Generation: one request's sequences (n choices, or one per completions prompt) from the engine
// to text. Per sequence: admission, the incremental detokenizer, stop strings (text that may
// start one is held back), logprobs, finish reason and usage. Streaming and non-streaming
// handlers drive it the same way; it cancels whatever is unfinished when destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/openai_request.h"
#include "api/server_state.h"
#include "api/stop_matcher.h"
#include "tokenizer/incremental_detokenizer.h"

namespace myriad::api {

struct SequenceSpec {
    std::vector<TokenId> prompt;
    SamplingParams params;
};

// New output of one sequence.
struct Piece {
    size_t seq = 0;
    std::string text;
    std::vector<TokenId> tokens;
    std::vector<SampleResult> logprobs;
    std::vector<SampleResult> prompt_logprobs;  // once, when asked: prompt tokens 1, 2, ...
    bool finished = false;
    const char* finish_reason = nullptr;  // "stop", "length", "abort" (set when finished)
    std::string stop_string;              // the stop string that ended the sequence, if one did
    std::string error;                    // the engine failed this sequence
};

struct Usage {
    int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

// The SamplingParams of a request (the model's defaults where it left a field out); the
// `max_tokens` it resolves to is checked against the context by the caller.
SamplingParams sampling_params(const ServerState& state, const GenerationFields& g);

// Checks prompt + max_tokens against the context (400 naming both); a request without
// max_tokens gets what is left of the context.
void fit_context(const ServerState& state, const GenerationFields& g, size_t prompt_len,
                 SamplingParams& params);

class Generation {
  public:
    // Admits the sequences (429 when full) and submits them (400 when the engine refuses).
    // `parser_markers`: keep the output parser's special tokens in skipped-special text.
    Generation(ServerState& state, std::vector<SequenceSpec> seqs, const GenerationFields& g,
               bool parser_markers);
    ~Generation();
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    size_t size() const { return seqs_.size(); }
    // Waits for output; calls `on_piece` for each sequence that progressed. False once every
    // sequence finished (and was reported with finished = true).
    bool next(const std::function<void(Piece&)>& on_piece);
    // Stops every sequence (client gone); their blocks are freed at the engine's next step.
    void cancel();
    const Usage& usage(size_t seq) const { return seqs_[seq]->usage; }
    Usage total_usage() const;

  private:
    struct Seq {
        std::shared_ptr<RequestHandle> handle;
        std::unique_ptr<IncrementalDetokenizer> detok;
        StopMatcher stop;
        Usage usage;
        bool finished = false;
        bool got_first = false;
        std::chrono::steady_clock::time_point last;
    };
    void process(size_t i, RequestOutput& out, const std::function<void(Piece&)>& on_piece);
    void finish_cancelled(size_t i, const std::function<void(Piece&)>& on_piece);

    ServerState& state_;
    // Declared before seqs_: destroyed after them, also when the constructor throws.
    Admission admission_;
    std::vector<std::unique_ptr<Seq>> seqs_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace myriad::api
