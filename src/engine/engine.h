// Engine: requests in, tokens out. Each step the scheduler picks a flat batch, every worker runs
// the forward pass on its shard, the sampler picks tokens on rank 0's logits, and each request's
// new tokens go to its handle. Runs on its own thread (start()) or step by step (tests).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/block_manager.h"
#include "engine/drafter.h"
#include "engine/request.h"
#include "engine/sampling_params.h"
#include "engine/scheduler.h"
#include "engine/step_run.h"
#include "engine/step_update.h"
#include "engine/worker_group.h"

namespace myriad {

// Whether the engine runs one step of the largest shape it schedules before serving (the
// warm-up): the backend sizes its step buffers (scratch arena, sampling workspaces) and loads
// its kernels then, not while requests wait. Auto: on for the GPU, where growing the arena
// also drops every captured graph; off for the CPU, where it only costs start-up time.
enum class WarmUp : uint8_t { Auto, On, Off };

// Whether a step whose sequences verify drafts of different lengths pads them to the longest
// (StepLimits::pad_drafts). Auto: where the backend samples on its device (CUDA, whose decode
// graphs need one length a step); On: everywhere (tests of the padding on the CPU).
enum class PadDrafts : uint8_t { Auto, On, Off };

struct EngineConfig {
    SchedulerConfig scheduler;
    WarmUp warm_up = WarmUp::Auto;
    int64_t max_model_len = 0;  // 0: max_position_embeddings capped by the KV cache
    bool prefix_caching = true;
    std::vector<TokenId> eos_ids;  // generation_config.json ∪ tokenizer_config.json
    SamplingDefaults defaults;
    SpeculativeConfig speculative;  // --speculative, --num-speculative-tokens, --draft-model
    // A drafter of the caller's instead of speculative.method's (tests; num_speculative_tokens
    // still bounds its drafts).
    std::shared_ptr<Drafter> drafter;
    // Drafts for sequences whose next tokens are forced too (bench-model --dataset: a model of
    // random weights forced through real answers, verified as if it had written them). Off, a
    // forced token is never drafted: it is known without the model.
    bool draft_forced = false;
    PadDrafts pad_drafts = PadDrafts::Auto;
#ifdef NDEBUG
    bool check_invariants = false;  // block manager checks after every step (tests, debug builds)
#else
    bool check_invariants = true;
#endif
    // Called with the logits each sampled token was drawn from, before any processing: request
    // id, position of the token the logits follow, [vocab] values (tests, evaluation).
    std::function<void(uint64_t, int64_t, const float*)> logits_observer;
};

struct EngineStats {
    int64_t steps = 0, preemptions = 0, prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0,
            running = 0, waiting = 0, blocks_used = 0, blocks_total = 0;
    // Speculative decoding (vLLM's spec_decode counters): sequences that verified a draft, the
    // draft tokens verified, and the ones accepted.
    int64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
    // Rows that padded drafts to one length a step (EngineConfig::pad_drafts), run and dropped.
    int64_t spec_pad_rows = 0;
    // Steps in which every sequence decodes (one new token, or a draft to verify): how many, the
    // sequences they ran (the sum of their batch sizes) and their seconds from the step's
    // building to its outputs' update. Per-token costs (constraints, drafts) are read from these
    // without the prefill chunks that join other steps.
    int64_t decode_steps = 0, decode_step_sequences = 0;
    double decode_step_seconds = 0;
};

class Engine {
  public:
    Engine(WorkerGroup& workers, EngineConfig config);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Checks the request (bad input names the field) and queues it; thread-safe.
    std::shared_ptr<RequestHandle> submit(const std::vector<TokenId>& prompt,
                                          SamplingParams params);
    // The request parameters with the model's defaults filled in where the caller left them.
    SamplingParams with_defaults(SamplingParams params, bool temperature_set, bool top_p_set,
                                 bool top_k_set, bool min_p_set, bool repetition_set) const;

    // Runs the loop on a background thread until destruction.
    void start();
    // One step on the caller's thread (when not started): false when there was nothing to do.
    bool step();
    void run_until_idle() {
        while (step()) {
        }
    }

    int64_t max_model_len() const { return max_model_len_; }
    int64_t vocab_size() const { return workers_.config().vocab_size; }
    EngineStats stats();
    const BlockManager& block_manager() const { return blocks_; }

  private:
    void take_submissions();
    void finish(Sequence* seq, FinishReason reason, RequestOutput out);
    void propose_drafts();
    void publish_stats(const StepCounts& counts, bool ran_step);  // the step's counts into stats_
    void loop();
    void warm_up();

    WorkerGroup& workers_;
    EngineConfig config_;
    int64_t max_model_len_;
    BlockManager blocks_;
    Scheduler scheduler_;
    std::shared_ptr<Drafter> drafter_;    // null: no speculation
    std::vector<int64_t> hidden_layers_;  // the drafter's (Drafter::hidden_layers)
    StepResults results_;

    std::mutex mutex_;  // guards pending_, stop_, next_id_, stats_
    std::condition_variable cv_;
    std::vector<std::unique_ptr<Sequence>> pending_;
    bool stop_ = false;
    bool stalled_ = false;  // the last step scheduled nothing though sequences remain (paused)
    uint64_t next_id_ = 1;
    EngineStats stats_;
    std::thread thread_;
};

}  // namespace myriad
