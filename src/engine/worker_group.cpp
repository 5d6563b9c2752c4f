#include "engine/worker_group.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "engine/device_choice.h"
#include "model/layout_check.h"
#include "model/shard_load.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "ops/cpu/cpu_ops.h"
#include "parallel/cpu_communicator.h"
#include "parallel/modelled_communicator.h"
#include "parallel/topology.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/thread_pool.h"

namespace myriad {

WorkerGroup::WorkerGroup(const ModelConfig& config, const Checkpoint& checkpoint,
                         WorkerGroupOptions options)
    : config_(config), checkpoint_(checkpoint), options_(options) {
    if (options_.tp < 1) bad_input("--tp {} must be at least 1", options_.tp);
    if (options_.expert_parallel && config_.n_routed_experts == 0)
        bad_input("--expert-parallel: {} has no routed experts", config_.path);
    layout_ = Layout(options_.tp, options_.expert_parallel, 0);
    if (options_.mtp) {
        if (config_.num_nextn_predict_layers < 1)
            bad_input(
                "--speculative mtp: {} has no MTP layers (its config.json's "
                "num_nextn_predict_layers is {}); use --speculative ngram or none",
                config_.path, config_.num_nextn_predict_layers);
        if (options_.mtp_spare_blocks < 1)
            bad_input("mtp_spare_blocks {} must be at least 1", options_.mtp_spare_blocks);
        config_.mtp_layers = config_.num_nextn_predict_layers;
    }
    // check_layout, before any weight (a run plan has done it: plan/run_plan.h).
    if (!options_.planned_kv_dtype) validate_checkpoint(config_, checkpoint_, layout_);
    const bool alone = options_.only_rank >= 0;
    if (alone && (options_.tp < 2 || options_.only_rank >= options_.tp))
        bad_input("--rank {} needs --tp of at least 2 and a rank below it", options_.only_rank);
    if (options_.modelled_collective_us < 0)
        bad_input("--collective-us {} must not be negative", options_.modelled_collective_us);
    const int workers = alone ? 1 : options_.tp;
    if (options_.device == Device::Cuda) {  // decided before any weight is read
        std::string why;
        if (cuda_device_count(&why) == 0) bad_input("--device cuda: {}; use --device cpu", why);
        if (options_.devices.empty())
            for (int r = 0; r < workers; ++r) options_.devices.push_back(r);
        if (static_cast<int>(options_.devices.size()) != workers)
            bad_input("--devices names {} GPU(s) for {}; give one per rank",
                      options_.devices.size(),
                      alone ? "--rank (one rank runs)" : fmt::format("--tp {}", options_.tp));
        if (options_.tp > 1 && !alone) {
            for (const std::string& line : topology_lines(gpu_topology())) log::info("{}", line);
            group_ = make_gpu_comm_group(options_.devices);
        }
    } else if (!alone) {
        group_ = std::make_shared<CpuCommGroup>(options_.tp);
    }
    if (alone)
        log::info("rank {} of {} alone: each collective a modelled wait of {} us",
                  options_.only_rank, options_.tp, options_.modelled_collective_us);
    if (options_.tp > 1 && !options_.planned_kv_dtype)
        log::info("layout: {} ({} routed experts {})", layout_.label(), config_.n_routed_experts,
                  layout_.expert_parallel() ? "placed whole, a block per rank"
                                            : "each split over the ranks");
    // Decided before any weight is read: an unusable KV setting never fails after loading.
    std::string note;
    if (options_.planned_kv_dtype) {
        kv_dtype_ = *options_.planned_kv_dtype;
    } else {
        kv_dtype_ = resolve_kv_cache_dtype(options_.kv_cache_dtype, config_, &note);
        if (options_.device == Device::Cuda && options_.kv_cache_dtype == KvCacheDtype::Auto &&
            kv_dtype_ == DType::F32)
            kv_dtype_ = DType::BF16;  // the GPU's default latent cache: half the bytes of F32
    }
    if (!note.empty()) log::info("{}", note);
    if (options_.device == Device::Cuda) {  // the kernels, or why a GPU cannot run the model
        // Each rank's choices, for its GPU and its shards; the lines are said once (the
        // choices are the same on every GPU that can run them, and the ranks' shapes are even),
        // and not at all where a run plan has printed them. (One rank alone: its choices alone,
        // on its one GPU.)
        for (int r = 0; r < options_.tp; ++r) {
            if (alone && r != options_.only_rank) {
                kernel_choices_.emplace_back();
                continue;
            }
            const int d = options_.devices[alone ? 0 : static_cast<size_t>(r)];
            const GpuKernelPlan plan =
                gpu_kernel_plan(config_, checkpoint_, kv_dtype_, d, layout_.of_rank(r));
            if (!plan.stop.empty()) bad_input("--device cuda: {}", plan.stop);
            if (r == (alone ? options_.only_rank : 0) && !options_.planned_kv_dtype)
                for (const std::string& line : plan.lines) log::info("{}", line);
            kernel_choices_.push_back(plan.choices);
        }
        if (const std::string why = gpu_layout_problem(config_, layout_); !why.empty())
            bad_input("--device cuda {}", why);
    }
    if (kv_dtype_ == DType::F8_E4M3) kv_scales_ = read_kv_scales(config_, checkpoint_);
    // Several ranks choose from their vocabulary slices' candidates unless told not to (one
    // rank alone, timed, has no model's logits to choose from).
    backend_samples_ =
        options_.tp == 1
            ? (options_.sampling == BackendSampling::On ||
               (options_.sampling == BackendSampling::Auto && options_.device == Device::Cuda))
            : !alone && options_.sampling != BackendSampling::Off;
    if (options_.threads <= 0) options_.threads = hardware_threads();
    // Several ranks share the CPU: one BLAS thread each, the cores divided among their loops.
    set_blas_threads(workers > 1 ? 1 : options_.threads);
    const auto load_start = std::chrono::steady_clock::now();
    // One reader for the process: every file read once, front to back, ahead of all the ranks.
    std::unique_ptr<ShardLoad> shard_load;
    std::unique_ptr<Progress> progress;
    const char* reader_env = std::getenv("MYRIAD_SHARD_READER");
    if (ShardLoad::applies(checkpoint_) && !(reader_env && std::string(reader_env) == "0")) {
        std::vector<Layout> ranks;
        for (int r = 0; r < options_.tp; ++r)
            if (!alone || r == options_.only_rank) ranks.push_back(layout_.of_rank(r));
        ShardReaderOptions ro;
        ro.threads = options_.read_threads > 0 ? options_.read_threads : 8;
        if (const char* v = std::getenv("MYRIAD_LOAD_THREADS"); v && std::atoi(v) > 0)
            ro.threads = std::atoi(v);
        shard_load = std::make_unique<ShardLoad>(config_, checkpoint_, ranks, ro);
        shard_load_ = shard_load.get();
        const auto total = static_cast<int64_t>(shard_load->reader().total_bytes());
        if (options_.load_progress || options_.load_status)
            progress = std::make_unique<Progress>("reading weights", total, 0,
                                                  options_.load_progress ? stderr : nullptr,
                                                  options_.load_status);
        Progress* p = progress.get();
        shard_load->reader().start([p](uint64_t bytes) {
            if (p) p->add(static_cast<int64_t>(bytes));
        });
    }
    if (alone)
        threads_.emplace_back([this] { run_worker(options_.only_rank); });
    else
        for (int r = 0; r < options_.tp; ++r) threads_.emplace_back([this, r] { run_worker(r); });
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return ready_ == workers; });
    load_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    load_times_.load_seconds = load_seconds_;
    if (shard_load) {
        const ShardReadStats st = shard_load->reader().stats();
        load_times_.bytes_read = st.bytes_read;
        load_times_.read_seconds = st.read_seconds;
        load_times_.reads = st.reads;
        load_times_.drops = st.drops;
        load_times_.bytes_dropped = st.bytes_dropped;
        shard_load_ = nullptr;
        lock.unlock();
        progress.reset();  // its last line
        shard_load.reset();
        lock.lock();
    }
    options_.load_status = nullptr;  // the caller's, valid while loading only
    if (error_) {
        stop_ = true;
        ++generation_;
        cv_.notify_all();
        lock.unlock();
        for (auto& t : threads_) t.join();
        threads_.clear();
        std::rethrow_exception(error_);
    }
}

WorkerGroup::~WorkerGroup() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        ++generation_;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void WorkerGroup::step(const StepInput& step, float* logits, const StepSampling* sampling,
                       int32_t* tokens, LogprobRows* logprobs, float* hidden,
                       const LayerInputs* layer_inputs) {
    MYRIAD_CHECK(!sampling || backend_samples_, "a StepSampling for workers that do not sample");
    std::unique_lock<std::mutex> lock(mutex_);
    step_ = &step;
    logits_ = logits;
    sampling_ = sampling;
    tokens_ = tokens;
    logprobs_ = logprobs;
    hidden_ = hidden;
    layer_inputs_ = layer_inputs;
    mtp_in_ = nullptr;
    run_step(lock);
}

void WorkerGroup::mtp_step(const StepInput& step, const float* hidden_in, float* logits,
                           float* hidden_out, int64_t mtp) {
    MYRIAD_CHECK(mtp >= 0 && mtp < config_.mtp_layers && hidden_in,
                 "MTP step of layer {} with {} MTP layers loaded", mtp, config_.mtp_layers);
    std::unique_lock<std::mutex> lock(mutex_);
    step_ = &step;
    logits_ = logits;
    sampling_ = nullptr;
    tokens_ = nullptr;
    logprobs_ = nullptr;
    hidden_ = hidden_out;
    layer_inputs_ = nullptr;
    mtp_in_ = hidden_in;
    mtp_index_ = mtp;
    run_step(lock);
}

void WorkerGroup::run_step(std::unique_lock<std::mutex>& lock) {
    done_ = 0;
    error_ = nullptr;
    ++generation_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_ == static_cast<int>(threads_.size()); });
    if (error_) {
        if (group_) group_->barrier().reset();  // every rank has left the step
        std::rethrow_exception(error_);
    }
}

int64_t WorkerGroup::modelled_all_reduces() const {
    return modelled_ ? modelled_->all_reduces() : 0;
}

int64_t WorkerGroup::modelled_gathers() const {
    return modelled_ ? modelled_->gathers() : 0;
}

void WorkerGroup::run_worker(int rank) {
    std::unique_ptr<Ops> ops;
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<DeepseekV3> model;
    std::unique_ptr<KvCache> cache, mtp_cache;
    const bool alone = options_.only_rank >= 0;
    const int lead = alone ? options_.only_rank : 0;  // the rank whose logits are returned
    try {
        if (options_.device == Device::Cuda) {
            // Graphs at any world: the communicator turns them off where its collectives wait
            // on the host (no peer access between the GPUs).
            ops = make_cuda_ops(options_.devices[alone ? 0 : static_cast<size_t>(rank)],
                                kernel_choices_[static_cast<size_t>(rank)]);
            if (alone)
                comm = make_modelled_gpu_communicator(options_.tp, rank,
                                                      options_.modelled_collective_us, *ops);
            else
                comm = options_.tp == 1 ? make_single_gpu_communicator()
                                        : make_gpu_communicator(group_, rank, *ops);
        } else {
            const int workers = alone ? 1 : options_.tp;
            auto cpu = std::make_unique<CpuOps>(std::max(1, options_.threads / workers));
            cpu->set_sampling(backend_samples_ && options_.tp == 1);
            ops = std::move(cpu);
            if (alone)
                comm = std::make_unique<ModelledCommunicator>(options_.tp, rank,
                                                              options_.modelled_collective_us);
            else
                comm = std::make_unique<CpuCommunicator>(
                    std::static_pointer_cast<CpuCommGroup>(group_), rank);
        }
        if (alone) modelled_ = static_cast<ModelledCommunicator*>(comm.get());
        ModelOptions mo = options_.model;
        if (shard_load_) mo.feed = {shard_load_, alone ? 0 : rank};
        model = std::make_unique<DeepseekV3>(config_, checkpoint_, *ops, *comm,
                                             layout_.of_rank(rank), mo);
        cache = std::make_unique<KvCache>(config_, *ops, options_.kv_blocks, options_.kv_block_size,
                                          kv_dtype_, kv_scales_);
        if (config_.mtp_layers > 0) {  // the MTP layers' own latent cache, a layer each
            ModelConfig mc = config_;
            mc.num_hidden_layers = config_.mtp_layers;
            mtp_cache =
                std::make_unique<KvCache>(mc, *ops, options_.kv_blocks + options_.mtp_spare_blocks,
                                          options_.kv_block_size, kv_dtype_);
        }
    } catch (const std::exception& e) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
        if (shard_load_) shard_load_->reader().finish(alone ? 0 : rank);  // read on without it
        // The others may be waiting for this rank to register its collectives' buffers.
        if (group_) group_->abort(fmt::format("rank {} failed to start: {}", rank, e.what()));
    }
    uint64_t seen;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (rank == lead && model) weight_bytes_ = model->weight_bytes();
        if (model) all_weight_bytes_ += model->weight_bytes();
        ++ready_;
        seen = generation_;
    }
    cv_.notify_all();
    std::vector<float> own_logits;
    std::vector<int32_t> own_tokens;
    for (;;) {
        const StepInput* step;
        float* logits;
        const StepSampling* sampling;
        int32_t* tokens;
        LogprobRows* logprobs;
        float* hidden;
        const LayerInputs* layer_inputs;
        const float* mtp_in;
        int64_t mtp_index;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            cv_.wait(lock, [&] { return generation_ != seen; });
            seen = generation_;
            if (stop_) return;
            step = step_;
            logits = logits_;
            sampling = sampling_;
            tokens = tokens_;
            logprobs = logprobs_;
            hidden = hidden_;
            layer_inputs = layer_inputs_;
            mtp_in = mtp_in_;
            mtp_index = mtp_index_;
        }
        try {
            if (rank != lead) {
                own_logits.resize(step->logit_rows.size() * config_.vocab_size);
                logits = own_logits.data();
                own_tokens.assign(step->logit_rows.size(), -1);
                tokens = own_tokens.data();
            }
            if (mtp_in)  // every rank's MTP output hidden states are the same; the lead's return
                model->forward_mtp(*step, mtp_in, *mtp_cache, logits,
                                   rank == lead ? hidden : nullptr, mtp_index);
            else  // sampled across ranks, every rank chooses (the same tokens); on one, rank 0
                model->forward(*step, *cache, logits,
                               rank == lead || options_.tp > 1 ? sampling : nullptr, tokens,
                               rank == lead ? logprobs : nullptr, rank == lead ? hidden : nullptr,
                               rank == lead ? layer_inputs : nullptr);
            comm->check_step();  // a collective that gave up waiting on the device
            if (rank == lead) lead_gathered_bytes_ = comm->gathered_bytes();
        } catch (const std::exception& e) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
            // The other ranks would wait for this one in their next collective: they fail too.
            if (group_) group_->abort(fmt::format("rank {} failed: {}", rank, e.what()));
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++done_;
        }
        cv_.notify_all();
    }
}

}  // namespace myriad
