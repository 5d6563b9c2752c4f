// Ops: everything the forward pass computes, over flat token batches. The forward pass is
// written once against this interface; backends (ops/cpu, later ops/cuda) implement it.
// Tensors live on the backend's device; activations are F32 on the CPU backend.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ops/logprob_rows.h"
#include "ops/sample_candidates.h"
#include "ops/step_input.h"
#include "ops/step_sampling.h"
#include "ops/weight.h"
#include "util/tensor.h"

namespace myriad {

// How rotary embedding pairs dimensions. DeepSeek-V3 rotates adjacent pairs (x[2i], x[2i+1])
// (reference.md §1.4); HalfSplit pairs (x[i], x[i + d/2]) as GPT-NeoX does.
enum class RopeStyle : uint8_t { AdjacentPairs, HalfSplit };

struct RopeParams {
    Tensor inv_freq;                // F32 [rope_dim / 2] on the device
    float attention_factor = 1.0f;  // multiplies cos and sin (YaRN)
    RopeStyle style = RopeStyle::AdjacentPairs;
};

// One layer of the paged MLA latent cache: per token kv_lora_rank latent values followed by
// qk_rope_head_dim rotated key values, shared by all heads. Stored as F32, BF16 or float8_e4m3fn
// (value = code * scale; written as value / scale, saturated to ±448); ops read it as F32.
struct KvLayerView {
    Tensor data;               // [num_blocks, block_size, latent_dim + rope_dim] of `dtype`
    DType dtype = DType::F32;  // F32, BF16 or F8_E4M3
    float scale = 1.0f;        // F8_E4M3 only: the layer's dequant scale
    int64_t block_size = 0;
    int64_t latent_dim = 0;
    int64_t rope_dim = 0;
};

// One piece of one sequence's context for the naive MLA form: positions [begin, end) of step
// sequence `seq`. A context longer than a call may gather is attended piece by piece.
struct ContextPiece {
    size_t seq = 0;
    int64_t begin = 0, end = 0;
    int64_t size() const { return end - begin; }
};

// A position in a backend's step scratch (Ops::mark_scratch): its chunk count, the bytes used
// in its last chunk and in all.
struct ScratchMark {
    size_t chunks = 0, used = 0, total = 0;
};

struct RouterParams {
    int64_t n_experts = 0;
    int64_t top_k = 0;
    int64_t n_group = 1;
    int64_t topk_group = 1;
    bool norm_topk_prob = true;
    float routed_scaling_factor = 1.0f;
};

// One SwiGLU MLP: down(silu(gate(x)) * up(x)). For tensor parallelism each rank holds a slice
// of the intermediate dimension, so its output is a partial sum.
struct MlpWeights {
    Weight gate, up, down;
};

class Ops {
  public:
    virtual ~Ops() = default;
    virtual Device device() const = 0;

    // ---- memory ----
    // Converts this rank's slice of a checkpoint tensor into the backend's runtime format.
    virtual Weight load_weight(const WeightSource& src) = 0;
    // Whether the Weight load_weight made of `src` keeps reading src's memory (zero copy): its
    // pages must then stay mapped after loading (the shard reader does not drop them).
    virtual bool keeps_source(const WeightSource& src) const {
        (void)src;
        return false;
    }
    // Every weight of the rank is loaded (load_weights' end): what only loading needed may go.
    virtual void loaded() {}
    // A zero-initialised device tensor that lives as long as the returned handle.
    virtual std::shared_ptr<void> allocate(Tensor& t) = 0;
    // Step-scoped scratch memory, valid until reset_scratch() (called at the start of a step).
    virtual Tensor scratch(DType dt, std::initializer_list<int64_t> dims) = 0;
    virtual void reset_scratch() = 0;
    // Scratch taken after mark_scratch(), by the caller or inside ops, is given back by
    // release_scratch(mark) (no tensor taken since may be used after it): a loop whose
    // iterations each take scratch then reuses it instead of adding to the step's total. By
    // default nothing is given back.
    virtual ScratchMark mark_scratch() const { return {}; }
    virtual void release_scratch(const ScratchMark& mark) { (void)mark; }
    virtual void copy_to_host(Tensor src, void* dst) = 0;
    virtual void copy_from_host(const void* src, Tensor dst) = 0;

    // ---- a step ----
    // Makes the step's ids, positions, slots and block tables available to the ops below.
    virtual void begin_step(const StepInput& step) = 0;
    // Backends that record steps (CUDA graphs) replay a recording of a step shaped like `step`
    // on its inputs, write the logits of its logit rows ([rows, width] F32) to `logits` and
    // return true; false: the caller runs the step op by op. Only single-rank models call it.
    // With `sampling`, the recording's logits are sampled as sample() does instead of copied.
    virtual bool replay_step(const StepInput& step, float* logits, int64_t width,
                             const StepSampling* sampling = nullptr, int32_t* tokens = nullptr) {
        (void)step;
        (void)logits;
        (void)width;
        (void)sampling;
        (void)tokens;
        return false;
    }

    // ---- sampling on the device ----
    // Whether one rank samples on this backend (then only token ids need to leave the device).
    // sample() itself works on every backend: ranks sampling across vocabulary slices use it on
    // the rows they gather whole.
    virtual bool samples() const { return false; }
    // Chooses tokens[i] for each logit row i of `logits` [n, vocab] not marked host, per
    // `sampling` (the arithmetic of ops/token_choice.h; the rows' logits are edited in place);
    // the rows marked host are copied to host_logits (rows of vocab; other rows untouched).
    virtual void sample(Tensor logits, const StepSampling& sampling, int32_t* tokens,
                        float* host_logits) {
        (void)logits;
        (void)sampling;
        (void)tokens;
        (void)host_logits;
    }

    // ---- sampling across vocabulary slices (ops/sample_candidates.h) ----
    // For each candidate row slice.rows[j] of `logits` [n, shard] (this rank's columns, from
    // vocab_begin): slice.local's edits and mask of the row, then its best slice.k candidates
    // into row j of out [m, 2 * k] (slice_candidates_row). The rows' logits may be edited in
    // place; the other rows are left as they are. By default computed on the host.
    virtual void slice_candidates(Tensor logits, const SliceSampling& slice, int64_t vocab_begin,
                                  Tensor out);
    // tokens[slice.rows[j]] (host memory) for each candidate row j, chosen from `gathered`
    // [m, world * 2 * k] (every rank's out of slice_candidates, side by side) with sampling.rows
    // (the step's own, not the slice's) as choose_from_candidates does. By default computed on the
    // host.
    virtual void choose_candidates(Tensor gathered, const SliceSampling& slice,
                                   const StepSampling& sampling, int32_t* tokens);
    // dst [rows.size(), cols] = src [.., cols] rows `rows` (the rows of a step's logits gathered
    // whole). By default through the host.
    virtual void copy_rows(Tensor src, const std::vector<int32_t>& rows, Tensor dst);
    // A recording step (CUDA graphs) ends at `logits`, which the caller goes on to use (a step
    // sampled across ranks); replay_step_logits then replays a recording of a step shaped like
    // `step` and returns where its logits ([rows, width] F32) are, on the device, or an empty
    // tensor (nothing recorded: the caller runs the step op by op). By default none is kept.
    virtual void end_recording(Tensor logits) { (void)logits; }
    virtual Tensor replay_step_logits(const StepInput& step, int64_t width) {
        (void)step;
        (void)width;
        return {};
    }

    // ---- logprobs at chosen rows (prompt logprobs) ----
    // For each row i of `logits` [slices, n, shard] (the vocabulary in slices of `shard`
    // columns, as the tensor-parallel ranks gather it; columns from `vocab` on are ignored):
    // the logprob of targets[i] and the top_n tokens with theirs, written to host memory with
    // the arithmetic of logprob_rows_host (ops/logprob_rows.h). By default the logits are copied
    // to the host and computed there; a device computes them where they are and sends back only
    // those numbers.
    virtual void logprob_rows(Tensor logits, int64_t vocab, const TokenId* targets, int64_t top_n,
                              float* target, TokenId* top_ids, float* top) {
        std::vector<float> host(static_cast<size_t>(logits.numel()));
        copy_to_host(logits, host.data());
        logprob_rows_host(host.data(), logits.dim(0), logits.dim(1), logits.dim(2), vocab, targets,
                          top_n, target, top_ids, top);
    }

    // out[t] = table[id_t - vocab_begin] when this rank holds that row, else 0.
    virtual void embed(const Weight& table, int64_t vocab_begin, Tensor out) = 0;
    // out = w * x / sqrt(mean(x^2) + eps), rows of x [T, D].
    virtual void rmsnorm(Tensor x, const Weight& w, float eps, Tensor out) = 0;
    // out [T, N] = x [T, K] · w^T.
    virtual void linear(Tensor x, const Weight& w, Tensor out) = 0;
    // x += y.
    virtual void add(Tensor x, Tensor y) = 0;
    // The residual add fused with the next norm: x += y, then out = rmsnorm(x) (rows [T, D];
    // the same arithmetic as add then rmsnorm, in one pass over x).
    virtual void add_rmsnorm(Tensor x, Tensor y, const Weight& w, float eps, Tensor out) = 0;
    // out = silu(gate) * up, all [T, I].
    virtual void silu_mul(Tensor gate, Tensor up, Tensor out) = 0;
    // out [T, I] = silu(x · gate^T) * (x · up^T), the first half of a gated MLP. By default
    // linear, linear and silu_mul; a backend may read both weights in one pass instead.
    virtual void linear_silu_mul(Tensor x, const Weight& gate, const Weight& up, Tensor out) {
        Tensor u = scratch(DType::F32, {out.dim(0), out.dim(1)});
        linear(x, gate, out);
        linear(x, up, u);
        silu_mul(out, u, out);
    }
    // out [N, D] = x [rows[i]] for the step's logit_rows.
    virtual void gather_logit_rows(Tensor x, Tensor out) = 0;
    // out [N] (I32) = argmax over the last dimension of x [N, V]; lowest index wins ties.
    virtual void argmax(Tensor x, Tensor out) = 0;

    // ---- MLA ----
    // Rotates q [T, H, width] columns [offset, offset + rope_dim) in place at the step positions.
    virtual void rope(Tensor q, int64_t offset, const RopeParams& rope) = 0;
    // For each new token: latent = rmsnorm(ckv[:, :latent_dim]), k_rot = rope(ckv[:, latent_dim:]),
    // written into the token's cache slot. ckv [T, latent_dim + rope_dim].
    virtual void mla_cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& rope,
                                  const KvLayerView& cache) = 0;
    // rope(q, offset, r), then mla_cache_append(ckv, norm, eps, r, cache) for the same tokens. By
    // default the two calls; a backend may rotate q in the same pass over the new tokens.
    virtual void mla_rope_and_append(Tensor q, int64_t offset, Tensor ckv, const Weight& norm,
                                     float eps, const RopeParams& r, const KvLayerView& cache) {
        rope(q, offset, r);
        mla_cache_append(ckv, norm, eps, r, cache);
    }
    // Concatenates the cached context of sequences [seq_begin, seq_end): latent [C, latent_dim]
    // and k_rot [C, rope_dim], C = sum of their ctx_len.
    virtual void mla_gather_context(const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                    Tensor latent, Tensor k_rot) = 0;
    // Naive (prefill) attention for sequences [seq_begin, seq_end): q [T, H, dn + dr] (rows of
    // the batch), kv [C, H, dn + dv] (context as gathered), k_rot [C, dr]; causal by position.
    // Writes out [T, H, dv] rows of those sequences.
    virtual void mla_attention_naive(Tensor q, Tensor kv, Tensor k_rot, size_t seq_begin,
                                     size_t seq_end, float softmax_scale, Tensor out) = 0;
    // mla_gather_context for one piece of one sequence's context: latent [n, latent_dim] and
    // k_rot [n, rope_dim] of positions [piece.begin, piece.end), n = piece.size().
    virtual void mla_gather_context_piece(const KvLayerView& cache, const ContextPiece& piece,
                                          Tensor latent, Tensor k_rot) = 0;
    // The naive form of sequence piece.seq's rows over that piece of its context only (kv
    // [n, H, dn + dv] and k_rot [n, dr] as gathered for it), causal by absolute position: row i
    // (position ctx_len - q_len + i) sees the piece's keys at positions up to its own. lse
    // [q_len, H] F32 is each row's log-sum-exp of its scaled scores over the pieces so far.
    // first: out (the sequence's rows of [T, H, dv]) and lse are this piece's alone; otherwise
    // the piece is merged into them (log-sum-exp weights), so pieces in any order give the whole
    // context's result. A row that sees no key of a piece takes nothing from it: lse -inf and out
    // 0 if it has seen no key at all.
    virtual void mla_attention_naive_piece(Tensor q, Tensor kv, Tensor k_rot,
                                           const ContextPiece& piece, float softmax_scale,
                                           Tensor out, Tensor lse, bool first) = 0;
    // q_lat [T, H, latent] = per head W_UK[h]^T · q_nope[h], with q [T, H, dn + dr] and kv_b the
    // kv_b_proj weight [H * (dn + dv), latent].
    virtual void mla_absorb_q(Tensor q, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                              Tensor q_lat) = 0;
    // Absorbed attention over the latent cache for sequences [seq_begin, seq_end): scores
    // q_lat·c + q_rot·k_rot, output o_lat [T, H, latent] = softmax · c; causal by position.
    virtual void mla_attention_absorbed(Tensor q_lat, Tensor q, int64_t nope_dim,
                                        const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                        float softmax_scale, Tensor o_lat) = 0;
    // out [T, H, dv] = per head W_UV[h] · o_lat[h].
    virtual void mla_absorb_v(Tensor o_lat, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                              Tensor out) = 0;

    // ---- MoE ----
    // Sigmoid scores, + bias for selection, group-limited top-k (dropped groups never chosen),
    // weights = unbiased scores (normalised if asked) * scaling. ids [T, k] I32, w [T, k] F32.
    virtual void moe_route(Tensor x, const Weight& gate, const Weight& bias,
                           const RouterParams& params, Tensor ids, Tensor weights) = 0;
    // logits [T, experts] = x · gate^T as moe_route computes them (a backend may use another
    // precision for the router than for other products); the route observer's copy.
    virtual void router_logits(Tensor x, const Weight& gate, Tensor logits) {
        linear(x, gate, logits);
    }
    // out [T, hidden] = sum_j w[t, j] * Expert_{ids[t, j]}(x[t]) over the experts this rank
    // holds (experts[e] with no rows are skipped).
    virtual void moe_experts(Tensor x, Tensor ids, Tensor weights,
                             const std::vector<MlpWeights>& experts, Tensor out) = 0;
    // out += what moe_experts would write (out holds the shared experts' output). By default
    // moe_experts into scratch, then add; a backend may add as it combines the experts.
    virtual void moe_experts_add(Tensor x, Tensor ids, Tensor weights,
                                 const std::vector<MlpWeights>& experts, Tensor out) {
        Tensor routed = scratch(DType::F32, {out.dim(0), out.dim(1)});
        moe_experts(x, ids, weights, experts, routed);
        add(out, routed);
    }
};

}  // namespace myriad
