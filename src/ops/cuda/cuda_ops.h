// The CUDA backend of Ops, one GPU per instance (reference implementation: ops/cpu).
//
// Activations are F32 on the device, as on the CPU: the residual stream, norms, softmax and
// the router stay in F32, so the GPU follows the CPU closely enough for greedy tokens to agree.
// Weights are BF16 (dense) or stay in their quantised format; products accumulate in F32.
// Steps of at most kSkinnyRows tokens (decode) run every linear through one kernel that
// dequantises weights in registers and multiplies F32 activations (bandwidth-bound); longer
// steps round activations to BF16 and use cuBLASLt (tensor cores), quantised weights expanded
// to BF16 a tile of rows at a time. MoE experts run as grouped launches over tokens sorted by
// expert on the device: no host loop over experts and no host synchronisation inside a step.
//
// Memory: weights and caches are allocated at load; a step takes its tensors from a scratch
// arena. The arena is sized by the largest step seen: a step that needs more takes an overflow
// block, and the next reset_scratch merges them into one, so steady state allocates nothing.
//
// CUDA graphs (cuda_graphs.cpp): a decode step (every sequence adds one token) of a batch size
// seen before is captured once, with the arena and the step's metadata block at fixed addresses,
// and later steps of that size replay it (replay_step) after uploading their inputs into the
// same block: one launch instead of hundreds. KernelChoices::graphs off turns this off. Replacing
// the arena or the metadata block drops every graph.
//
// Every choice between kernels comes from the KernelChoices the backend is made with
// (ops/kernel_choices.h), passed to the launchers.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/kernels.h"
#include "ops/cuda/pinned_staging.h"
#include "ops/ops.h"

namespace myriad::cuda {

// The most rows a skinny launch takes in one pass (KernelChoices::skinny_rows decides which
// linears go to the skinny kernel; exact mode sends every linear through it).
constexpr int64_t kSkinnyRows = 16;

// Owned device memory.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) {
        o.ptr_ = nullptr;
        o.size_ = 0;
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* data() const { return ptr_; }
    size_t size() const { return size_; }

  private:
    void* ptr_ = nullptr;
    size_t size_ = 0;
};

// Decode steps replayed from CUDA graphs by every CudaOps of the process (tests).
int64_t graph_replays_total();
// Of those, the steps verifying drafts (more than one row a sequence).
int64_t graph_verify_replays_total();
// Seconds every CudaOps of the process spent capturing and instantiating graphs (start-up
// breakdown).
double graph_capture_seconds_total();

class CudaOps final : public Ops {
  public:
    // The backend on GPU `device` running `choices` (KernelChoices::choose for this GPU and the
    // rank's shapes, with any overrides).
    CudaOps(int device, const KernelChoices& choices);
    ~CudaOps() override;

    Device device() const override { return Device::Cuda; }
    Weight load_weight(const WeightSource& src) override;
    void loaded() override { staging_.release(); }
    std::shared_ptr<void> allocate(Tensor& t) override;
    Tensor scratch(DType dt, std::initializer_list<int64_t> dims) override;
    void reset_scratch() override;
    ScratchMark mark_scratch() const override { return {chunks_.size(), used_, total_used_}; }
    void release_scratch(const ScratchMark& mark) override;
    void copy_to_host(Tensor src, void* dst) override;
    void copy_from_host(const void* src, Tensor dst) override;

    void begin_step(const StepInput& step) override;
    bool replay_step(const StepInput& step, float* logits, int64_t width,
                     const StepSampling* sampling = nullptr, int32_t* tokens = nullptr) override;
    bool samples() const override { return true; }
    void sample(Tensor logits, const StepSampling& sampling, int32_t* tokens,
                float* host_logits) override;
    void logprob_rows(Tensor logits, int64_t vocab, const TokenId* targets, int64_t top_n,
                      float* target, TokenId* top_ids, float* top) override;
    // Sampling across vocabulary slices (cuda_candidates.cpp, candidate_kernels.cu).
    void slice_candidates(Tensor logits, const SliceSampling& slice, int64_t vocab_begin,
                          Tensor out) override;
    void choose_candidates(Tensor gathered, const SliceSampling& slice,
                           const StepSampling& sampling, int32_t* tokens) override;
    void copy_rows(Tensor src, const std::vector<int32_t>& rows, Tensor dst) override;
    void end_recording(Tensor logits) override;
    Tensor replay_step_logits(const StepInput& step, int64_t width) override;
    void embed(const Weight& table, int64_t vocab_begin, Tensor out) override;
    void rmsnorm(Tensor x, const Weight& w, float eps, Tensor out) override;
    void linear(Tensor x, const Weight& w, Tensor out) override;
    void add(Tensor x, Tensor y) override;
    void add_rmsnorm(Tensor x, Tensor y, const Weight& w, float eps, Tensor out) override;
    void silu_mul(Tensor gate, Tensor up, Tensor out) override;
    // Decode-size steps (≤ KernelChoices::skinny_rows rows): one skinny launch reading the gate and
    // up rows together (SkinnyArgs::glu); otherwise the default.
    void linear_silu_mul(Tensor x, const Weight& gate, const Weight& up, Tensor out) override;
    void gather_logit_rows(Tensor x, Tensor out) override;
    void argmax(Tensor x, Tensor out) override;

    void rope(Tensor q, int64_t offset, const RopeParams& rope) override;
    void mla_cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& rope,
                          const KvLayerView& cache) override;
    void mla_rope_and_append(Tensor q, int64_t offset, Tensor ckv, const Weight& norm, float eps,
                             const RopeParams& r, const KvLayerView& cache) override;
    void mla_gather_context(const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                            Tensor latent, Tensor k_rot) override;
    void mla_attention_naive(Tensor q, Tensor kv, Tensor k_rot, size_t seq_begin, size_t seq_end,
                             float softmax_scale, Tensor out) override;
    void mla_gather_context_piece(const KvLayerView& cache, const ContextPiece& piece,
                                  Tensor latent, Tensor k_rot) override;
    void mla_attention_naive_piece(Tensor q, Tensor kv, Tensor k_rot, const ContextPiece& piece,
                                   float softmax_scale, Tensor out, Tensor lse,
                                   bool first) override;
    void mla_absorb_q(Tensor q, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                      Tensor q_lat) override;
    void mla_attention_absorbed(Tensor q_lat, Tensor q, int64_t nope_dim, const KvLayerView& cache,
                                size_t seq_begin, size_t seq_end, float softmax_scale,
                                Tensor o_lat) override;
    void mla_absorb_v(Tensor o_lat, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                      Tensor out) override;

    void router_logits(Tensor x, const Weight& gate, Tensor logits) override {
        linear_skinny(x, gate, logits);
    }
    void moe_route(Tensor x, const Weight& gate, const Weight& bias, const RouterParams& params,
                   Tensor ids, Tensor weights) override;
    void moe_experts(Tensor x, Tensor ids, Tensor weights, const std::vector<MlpWeights>& experts,
                     Tensor out) override;
    void moe_experts_add(Tensor x, Tensor ids, Tensor weights,
                         const std::vector<MlpWeights>& experts, Tensor out) override;

    cudaStream_t stream() const { return stream_; }
    // The kernels this backend runs.
    const KernelChoices& choices() const { return choices_; }
    // Replaces them (tests: each variant of a kernel on the same weights). Graphs captured so far
    // are dropped; `exact` must stay as it was at load (the weights' low parts are kept then), and
    // graphs stay off if they were turned off.
    void set_choices(const KernelChoices& choices);
    // No CUDA graphs (collectives that wait on the host cannot be recorded).
    void disable_graphs() {
        drop_graphs();
        graphs_enabled_ = false;
    }
    // Graphs captured so far (tests: a replayed step really was replayed).
    size_t graph_count() const { return graphs_.size(); }
    int64_t graph_replays() const { return graph_replays_; }
    // The most scratch bytes a step has held at once so far: what the arena is sized to at the
    // next reset (tests: a step needed no more than an earlier one).
    size_t scratch_peak() const { return std::max(peak_, total_used_); }
    // Waits for the stream; throws naming `what` if a kernel failed.
    void synchronize(const char* what);

  private:
    const StepInput& step() const;
    // Throws naming `what` if the last launch failed; with KernelChoices::sync also waits for
    // the stream, so a failing kernel is named by its op.
    void check(const char* what);
    StepView step_view() const;
    // The kernels' view of a weight (its device copy).
    static QMatrix matrix(const Weight& w);
    static QFormat qformat(const Weight& w);
    // moe_experts (add: moe_experts_add).
    void run_experts(Tensor x, Tensor ids, Tensor weights, const std::vector<MlpWeights>& experts,
                     Tensor out, bool add);
    // mla_cache_append, rotating q's columns [offset, offset + rope dims) too when q is given.
    void cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& r,
                      const KvLayerView& cache, const Tensor* q, int64_t offset);
    // Few rows through the register-dequantising kernel; x rows of stride x.dim(-1).
    void linear_skinny(Tensor x, const Weight& w, Tensor out);
    // out = x · W^T with cuBLASLt on BF16 operands (F32 output), W expanded by tiles if quantised.
    void linear_blas(Tensor x, const Weight& w, Tensor out);
    void gemm_bf16(const uint16_t* x, int64_t m, int64_t k, const uint16_t* w, int64_t n,
                   float* out, int64_t ldo);
    KvView kv_view(const KvLayerView& c) const;
    RopeView rope_view(const RopeParams& r) const;
    // Device table of an MoE layer's experts, built on its first step (keyed by the vector).
    struct ExpertTable {
        DeviceBuffer mats;  // QMatrix [E][3]: gate, up, down
        DeviceBuffer held;  // uint8 [E]
        QFormat format = QFormat::Bf16;
        int64_t inter = 0;
        bool mma_v2 = true;  // every held matrix is one grouped_mma's v2 reads
        size_t count = 0;
        const void* first_codes = nullptr;
    };
    const ExpertTable& expert_table(const std::vector<MlpWeights>& experts);

    int device_ = 0;
    cudaStream_t stream_ = nullptr;
    cublasLtHandle_t lt_ = nullptr;
    DeviceBuffer lt_workspace_;
    KernelChoices choices_;
    // KernelChoices::profile: each op waited for and timed (seconds, calls per op name), printed
    // when the backend is destroyed; graphs off. For finding the costly ops, not for speed.
    bool profile_ = false;
    std::map<std::string, std::pair<double, int64_t>> profile_times_;
    double profile_last_ = 0;
    const StepInput* step_ = nullptr;

    // Step metadata: one pinned host staging block uploaded with one copy per step.
    DeviceBuffer step_dev_;
    void* step_host_ = nullptr;
    size_t step_capacity_ = 0;
    struct StepOffsets {
        size_t ids, positions, slots, row_seq, q_begin, q_len, ctx_len, ctx_prefix, table_begin,
            tables, logit_rows;
    } off_{};

    // Scratch arena: the chunks used this step; at reset they merge into one of their total.
    std::vector<DeviceBuffer> chunks_;
    size_t used_ = 0, total_used_ = 0, peak_ = 0;

    // The skinny kernel's workspace for products whose K is split over blocks (SkinnyArgs::
    // split_partials): kSplitFloats sums, then kSplitCounters counters kept at zero between
    // launches. Allocated with the backend (never inside a step or a capture).
    static constexpr int64_t kSplitFloats = int64_t{1} << 20;
    static constexpr int64_t kSplitCounters = 4096;
    DeviceBuffer split_ws_;
    void use_split_workspace(SkinnyArgs& a);

    // BF16 staging of a weight tile for the cuBLASLt path (grown at load, never in a step).
    DeviceBuffer dequant_tile_;
    size_t dequant_tile_elems_ = 0;

    std::map<const void*, ExpertTable> expert_tables_;

    // Exact mode: quantised weights that are held dense (kv_b_proj) lose precision as BF16 (an
    // FP8 code times an F32 block scale has up to 27 significant bits). Their low part, each
    // value minus its BF16 rounding, is kept beside them as a second BF16 matrix, keyed by the
    // high part's storage; every product with the weight adds the product with the low part, so
    // the pair stands for the F32 values to about 2^-17 (the CPU's F32 copy).
    std::map<const void*, Weight> exact_low_;
    const Weight* exact_low(const Weight& w) const;

    // ---- CUDA graphs (cuda_graphs.cpp) ----
    // The graph key of a decode step: every sequence q_len r (1, or a draft of r - 1 tokens),
    // logits for every row, in order; sequences * 64 + r (plus a flag where the context is long
    // for decode attention: KernelChoices::decode_long), else -1 (cuda_graphs.cpp).
    int64_t decode_key(const StepInput& st) const;
    // Fills the pinned staging block and uploads it (begin_step without the bookkeeping).
    void stage_step(const StepInput& st);
    void drop_graphs();
    // copy_to_host of the captured step's output: ends the capture and runs the graph.
    void finish_capture(Tensor src);
    struct StepGraph {
        cudaGraphExec_t exec = nullptr;
        const void* out = nullptr;  // the logits the recorded step leaves on the device
        size_t bytes = 0;
        StepOffsets offsets{};
    };
    bool graphs_enabled_ = true;
    std::map<int64_t, StepGraph> graphs_;
    // Sampling buffers (sample()), never used inside a captured graph: sized by the engine's
    // warm-up step (as many rows as any step samples, the sort workspace), except the logit
    // edits, whose number has no bound worth reserving (a row's penalties cover the distinct
    // tokens of its context): they go up through a buffer of kEditPiece, a piece at a time.
    static constexpr size_t kEditPiece = size_t{1} << 18;
    // The token masks of structured output (ceil(vocab / 32) words per masked row) are sized
    // by the warm-up step too, which masks every row.
    DeviceBuffer sample_meta_, sample_edits_, sample_rows_, sample_tokens_, sample_ws_,
        sample_masks_;
    // logprob_rows' targets and results (sized by the warm-up's pass of kLogprobRowsPerPass).
    DeviceBuffer logprob_io_;
    // Uploads sampling's rows to sample_meta_ and applies their edits and token masks to
    // `logits` [n, vocab] (host rows skipped): the first part of sample(); returns the rows.
    SampleRow* edit_rows(float* logits, int64_t n, int64_t vocab, const StepSampling& sampling);
    // The recording of a step shaped like `st` with logits of `width` columns, replayed
    // (launched on the stream); null when there is none.
    const void* replay_recording(const StepInput& st, int64_t width);
    // A buffer of at least `bytes` (regrown, contents dropped).
    static void* ensure(DeviceBuffer& b, size_t bytes);
    std::map<int64_t, int> seen_;  // decode steps run per key before capture
    // Weight uploads through pinned buffers on a copy stream (off: MYRIAD_PINNED_STAGING=0, the
    // plain pageable copies, for comparison).
    PinnedStaging staging_;
    bool staging_on_ = true;
    int64_t capturing_ = -1;  // key of the step being captured
    std::chrono::steady_clock::time_point capture_start_;
    int64_t graph_replays_ = 0;
};

}  // namespace myriad::cuda
