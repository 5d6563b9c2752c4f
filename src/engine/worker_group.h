// WorkerGroup: one worker per tensor-parallel rank, each a thread holding its shard of the model
// (parallel/layout.h says which) and its KV cache, running every step in lock step; rank 0's
// logits are returned. On the CPU the ranks share the machine: their communicator is in-process.
// On GPUs each rank has its own backend and stream on the GPU --devices gives it (several ranks
// may share one: that is how one GPU tests every layout). A rank that fails aborts the step's
// collectives, so the others fail too instead of waiting: the step throws, the next starts clean.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "format/checkpoint.h"
#include "model/deepseek_v3.h"
#include "model/kv_cache.h"
#include "ops/kernel_choices.h"

namespace myriad {

class CommGroup;
class ModelledCommunicator;
class ShardLoad;

// Tokens per KV-cache block unless a caller chooses otherwise.
inline constexpr int64_t kKvBlockSize = 16;

// Who chooses the tokens: On makes the backend sample on its device (only ids come back; on the
// CPU backend, as a device would: tests of that path); Off copies the logits to the engine,
// which samples. Auto is On for one GPU rank (tests/gpu/sampling_test.cpp checks it equals the
// engine's sampling), off for one CPU rank, and On for several ranks, which then choose from
// their vocabulary slices' candidates (ops/sample_candidates.h) where a row allows it.
enum class BackendSampling : uint8_t { Auto, On, Off };

struct WorkerGroupOptions {
    int tp = 1;
    bool expert_parallel = false;          // whole routed experts per rank (--expert-parallel)
    std::vector<int> devices;              // GPU of each rank (--devices); empty: 0, 1, ..., tp - 1
    int threads = 0;                       // CPU threads in all; 0 = the machine's
    int64_t kv_blocks = 256;               // blocks per rank
    int64_t kv_block_size = kKvBlockSize;  // tokens per block
    KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;  // --kv-cache-dtype (generate, serve)
    Device device = Device::Cpu;  // --device: Cuda runs each rank on its GPU of `devices`
    BackendSampling sampling = BackendSampling::Auto;
    ModelOptions model;
    // >= 0: only this rank of the `tp` runs (its shard alone is built), its collectives a
    // modelled wait of `modelled_collective_us` (parallel/modelled_communicator.h): one rank of a
    // layout too big for this machine, timed (bench-model --rank). `devices` then names its GPU
    // alone; its logits are not the model's.
    int only_rank = -1;
    double modelled_collective_us = 0;
    // Set when a run plan (plan/run_plan.h) decided the run: the latent cache's dtype; the plan
    // has checked the GPUs' kernels and the layout and printed them, so the workers do not.
    std::optional<DType> planned_kv_dtype;
    // --speculative mtp: load the checkpoint's MTP layers (num_nextn_predict_layers; a checkpoint
    // without any is bad input before loading) and give each rank a cache for their attention:
    // the target's blocks (the same block tables address it) plus `mtp_spare_blocks` for the
    // positions of chained drafts past a sequence's own blocks.
    bool mtp = false;
    int64_t mtp_spare_blocks = 64;
    // Loading a safetensors checkpoint: the shard reader's threads (0: 8, or $MYRIAD_LOAD_THREADS;
    // format/shard_reader.h), a progress bar or lines on stderr while the weights are read, and
    // each progress line told to `load_status` (serve: /health and sd_notify STATUS).
    int read_threads = 0;
    bool load_progress = false;
    std::function<void(const std::string&)> load_status = {};
};

// Where the load's time went (serve's start-up breakdown): the shard reader's bytes and seconds
// (from the first read to the last), and the whole load (every rank holding its weights and
// KV cache); copying is what the load took beyond the reading it overlapped.
struct LoadTimes {
    uint64_t bytes_read = 0;
    double read_seconds = 0;
    double load_seconds = 0;
    int64_t reads = 0, drops = 0;
    uint64_t bytes_dropped = 0;
    double copy_seconds() const {
        return load_seconds > read_seconds ? load_seconds - read_seconds : 0;
    }
};

class WorkerGroup {
  public:
    // Validates the checkpoint against the config once, then starts `tp` workers that load
    // their shards in parallel. Throws (bad input) before any worker starts if it cannot work.
    WorkerGroup(const ModelConfig& config, const Checkpoint& checkpoint,
                WorkerGroupOptions options);
    ~WorkerGroup();
    WorkerGroup(const WorkerGroup&) = delete;
    WorkerGroup& operator=(const WorkerGroup&) = delete;

    const ModelConfig& config() const { return config_; }
    const WorkerGroupOptions& options() const { return options_; }
    // Who holds what (rank 0's view; Layout::of_rank for the others).
    const Layout& layout() const { return layout_; }
    size_t weight_bytes_per_rank() const { return weight_bytes_; }
    // Every rank's weights, and the seconds from starting the ranks to all of them holding their
    // weights and KV cache: the load rate serve prints.
    size_t weight_bytes_all_ranks() const { return all_weight_bytes_; }
    double load_seconds() const { return load_seconds_; }
    const LoadTimes& load_times() const { return load_times_; }
    // What the KV cache stores (F32, BF16 or F8_E4M3), resolved from kv_cache_dtype at start.
    DType kv_cache_dtype() const { return kv_dtype_; }
    // Whether step() takes a StepSampling: one rank whose backend samples, or several ranks
    // (BackendSampling).
    bool backend_samples() const { return backend_samples_; }
    // With only_rank: the collectives its steps have issued so far (all-reduces, gathers).
    int64_t modelled_all_reduces() const;
    int64_t modelled_gathers() const;
    // The bytes of rank 0's gathers' results so far (Communicator::gathered_bytes), as of the
    // last step: what the steps' logits cost to cross.
    int64_t gathered_bytes() const { return lead_gathered_bytes_; }
    // The ranks' communicator group (null for one GPU rank): what it measured at start.
    const CommGroup* comm_group() const { return group_.get(); }
    // Runs one step on every rank; writes [step.logit_rows, vocab] logits to `logits`. With
    // `sampling` (only when backend_samples()), rank 0's backend chooses tokens[i] for the rows
    // not marked host, and only the host rows' logits are written. The results of the step's
    // logprob spans (prompt logprobs) go to `logprobs`.
    // With `hidden` (a step marked eager), every row's hidden state before the final norm
    // ([T, hidden]) goes there; with `layer_inputs` (eager too), the inputs of its target layers
    // (DeepseekV3::forward's LayerInputs, rank 0's: what an EAGLE3 drafter takes).
    void step(const StepInput& step, float* logits, const StepSampling* sampling = nullptr,
              int32_t* tokens = nullptr, LogprobRows* logprobs = nullptr, float* hidden = nullptr,
              const LayerInputs* layer_inputs = nullptr);
    // The target checkpoint the ranks loaded (an EAGLE3 draft without its own embedding shares
    // the target's).
    const Checkpoint& checkpoint() const { return checkpoint_; }
    // MTP layers loaded (options.mtp), and the first of the spare blocks of their cache.
    int64_t mtp_layers() const { return config_.mtp_layers; }
    int64_t mtp_spare_begin() const { return options_.kv_blocks; }
    // One step of MTP layer `mtp` on every rank (DeepseekV3::forward_mtp): rank 0's logits of
    // step.logit_rows ([rows, vocab]) to `logits`, its output hidden states to `hidden_out`.
    void mtp_step(const StepInput& step, const float* hidden_in, float* logits, float* hidden_out,
                  int64_t mtp = 0);

  private:
    void run_worker(int rank);
    void run_step(std::unique_lock<std::mutex>& lock);  // the workers run step_, as set

    ModelConfig config_;
    const Checkpoint& checkpoint_;
    WorkerGroupOptions options_;
    size_t weight_bytes_ = 0;
    size_t all_weight_bytes_ = 0;  // every rank's, for the load rate
    double load_seconds_ = 0;
    LoadTimes load_times_;
    ShardLoad* shard_load_ = nullptr;  // while loading
    DType kv_dtype_ = DType::F32;
    std::vector<float> kv_scales_;
    Layout layout_;
    std::vector<KernelChoices> kernel_choices_;  // each rank's, on GPUs (the plan's)
    std::shared_ptr<CommGroup> group_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable cv_;
    int ready_ = 0;  // workers that finished loading
    int done_ = 0;   // workers that finished the current step
    uint64_t generation_ = 0;
    bool stop_ = false;
    const StepInput* step_ = nullptr;
    float* logits_ = nullptr;
    const StepSampling* sampling_ = nullptr;
    int32_t* tokens_ = nullptr;
    LogprobRows* logprobs_ = nullptr;
    float* hidden_ = nullptr;
    const LayerInputs* layer_inputs_ = nullptr;
    const float* mtp_in_ = nullptr;  // set: the step is an MTP step (mtp_step)
    int64_t mtp_index_ = 0;
    bool backend_samples_ = false;
    int64_t lead_gathered_bytes_ = 0;  // written by rank 0's worker inside a step
    std::exception_ptr error_;
    ModelledCommunicator* modelled_ = nullptr;  // only_rank's communicator, while it runs
};

}  // namespace myriad
