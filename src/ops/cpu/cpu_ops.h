// The CPU backend: the reference implementation of Ops. F32 activations; dense weights converted
// from BF16/F16/F32 at load (exactly), quantised weights kept packed in the checkpoint mapping
// and dequantised a tile of rows at a time in linear(); FP32 accumulation, OpenBLAS for matrix
// products, a thread pool for attention and element-wise loops.
#pragma once

#include <memory>
#include <vector>

#include "ops/ops.h"
#include "util/thread_pool.h"

namespace myriad {

class CpuOps : public Ops {
  public:
    // `threads`: worker threads for this backend's own loops (attention, norms).
    explicit CpuOps(int threads = 1);
    ~CpuOps() override;

    Device device() const override { return Device::Cpu; }
    Weight load_weight(const WeightSource& src) override;
    // Quantised weights stay windows of the mapped checkpoint (expanded tile by tile in linear).
    bool keeps_source(const WeightSource& src) const override {
        return src.synthetic.seed == 0 && src.format != WeightFormat::Dense && !src.to_dense;
    }
    std::shared_ptr<void> allocate(Tensor& t) override;
    Tensor scratch(DType dt, std::initializer_list<int64_t> dims) override;
    void reset_scratch() override;
    ScratchMark mark_scratch() const override { return {chunks_.size(), used_, total_used_}; }
    void release_scratch(const ScratchMark& mark) override;
    void copy_to_host(Tensor src, void* dst) override;
    void copy_from_host(const void* src, Tensor dst) override;

    void begin_step(const StepInput& step) override { step_ = &step; }
    // The CPU samples in the engine (its logits are host memory already); set_sampling(true)
    // makes this backend sample as a device would, so tests can check that path on the CPU.
    void set_sampling(bool on) { sampling_ = on; }
    bool samples() const override { return sampling_; }
    void sample(Tensor logits, const StepSampling& sampling, int32_t* tokens,
                float* host_logits) override;
    void embed(const Weight& table, int64_t vocab_begin, Tensor out) override;
    void rmsnorm(Tensor x, const Weight& w, float eps, Tensor out) override;
    void linear(Tensor x, const Weight& w, Tensor out) override;
    void add(Tensor x, Tensor y) override;
    void add_rmsnorm(Tensor x, Tensor y, const Weight& w, float eps, Tensor out) override;
    void silu_mul(Tensor gate, Tensor up, Tensor out) override;
    void gather_logit_rows(Tensor x, Tensor out) override;
    void argmax(Tensor x, Tensor out) override;

    void rope(Tensor q, int64_t offset, const RopeParams& rope) override;
    void mla_cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& rope,
                          const KvLayerView& cache) override;
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

    void moe_route(Tensor x, const Weight& gate, const Weight& bias, const RouterParams& params,
                   Tensor ids, Tensor weights) override;
    void moe_experts(Tensor x, Tensor ids, Tensor weights, const std::vector<MlpWeights>& experts,
                     Tensor out) override;

  private:
    const StepInput& step() const;
    ThreadPool pool_;
    const StepInput* step_ = nullptr;
    std::vector<float> dequant_tile_;  // rows of a quantised weight expanded by linear()
    // Scratch arena: chunks used this step; at reset they merge into one chunk of their total.
    std::vector<Buffer> chunks_;
    size_t used_ = 0;  // bytes used in the last chunk
    size_t total_used_ = 0, peak_ = 0;
    bool sampling_ = false;
};

// Rotates `dim` values at `x` (adjacent pairs or half split) at `position`.
void rope_rotate(float* x, int64_t dim, int32_t position, const float* inv_freq,
                 float attention_factor, RopeStyle style);

// C = A · B^T with A [m, k] (row stride lda), B [n, k] (row stride ldb), C [m, n] (stride ldc).
void sgemm_nt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc);
// C = A · B with A [m, k], B [k, n].
void sgemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc);

// Sets OpenBLAS's thread count (process-wide): 1 when several ranks share the CPU.
void set_blas_threads(int threads);

}  // namespace myriad
