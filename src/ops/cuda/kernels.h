// The CUDA kernels' launchers: plain C++ signatures over device pointers, so the host code of the
// backend (cuda_*.cpp, compiled by the C++ compiler) never sees device code. Every launcher
// enqueues on `stream` and returns at once. Launchers that choose between kernels take the
// backend's KernelChoices (ops/kernel_choices.h): no choice is read from anywhere else.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/kernel_choices.h"
#include "ops/step_sampling.h"

namespace myriad::cuda {

// How a weight matrix is stored on the device (ops/weight.h has the file formats).
enum class QFormat : int32_t { Bf16 = 0, Fp8Block = 1, Nvfp4 = 2, Int4 = 3 };

// One weight matrix [rows, cols] as the kernels read it: row r's codes start at
// codes + r * row_bytes; element (r, c) has the scale at row (r + row_phase) / block_rows and
// column (c + col_phase) / block_cols of `scales` (F32, or e4m3 bytes for NVFP4, whose value is
// then multiplied by global_scale). Dense weights are BF16 with no scales. Columns are a multiple
// of 8 (eight elements share a scale).
struct QMatrix {
    const uint8_t* codes = nullptr;  // null: this matrix is not held (an expert of another rank)
    int64_t row_bytes = 0;
    const void* scales = nullptr;
    int64_t scale_stride = 0;  // scale elements per scale row
    int32_t block_rows = 1, block_cols = 1;
    int32_t row_phase = 0, col_phase = 0;
    float global_scale = 1.0f;
    int32_t rows = 0, cols = 0;
};

// The GPU's multiprocessors (132 on the H200), for grid sizes; read once.
int multiprocessors();
// Early launch (pdl.cuh) on stream `s`: on unless its backend's KernelChoices::pdl is off (the
// backend registers its stream; on again before the stream is destroyed).
void set_stream_pdl(cudaStream_t s, bool on);

// ---- element-wise and rows ----
void fill_f32(float* p, int64_t n, float value, cudaStream_t s);
void f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t s);
// out[t] = table[ids[t] - vocab_begin] (BF16 or F32 rows of `hidden`), zero when not held.
void embed(const void* table, bool table_bf16, int64_t rows, int64_t hidden, const int32_t* ids,
           int64_t vocab_begin, int64_t tokens, float* out, cudaStream_t s);
// out = w * x * rsqrt(mean(x^2) + eps) per row; `w` is F32 or BF16.
void rmsnorm(const float* x, const void* w, bool w_bf16, int64_t rows, int64_t d, float eps,
             float* out, cudaStream_t s);
void add(float* x, const float* y, int64_t n, cudaStream_t s);
// x += y, then out = rmsnorm(x) with weight w, per row of d; out must not alias x or y.
void add_rmsnorm(float* x, const float* y, const void* w, bool w_bf16, int64_t rows, int64_t d,
                 float eps, float* out, cudaStream_t s);
void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t s);
void gather_rows(const float* x, int64_t d, const int32_t* rows, int64_t n, float* out,
                 cudaStream_t s);
void argmax(const float* x, int64_t rows, int64_t v, int32_t* out, cudaStream_t s);

// ---- synthetic weights (bench-model --random; ops/synthetic_weight.h) ----
enum class SynthKind : int32_t {
    DenseBf16,
    DenseF32,
    Fp8Codes,
    Fp8Scales,
    Nvfp4Codes,
    Nvfp4Scales
};
// Writes rows x cols elements (bytes for codes) at `out`, element (r, c) being element
// (row0 + r) * src_width + col0 + c of the full synthetic tensor.
void synthesize(SynthKind kind, uint64_t seed, float center, float amplitude, int64_t rows,
                int64_t cols, int64_t src_width, int64_t row0, int64_t col0, void* out,
                cudaStream_t s);

// ---- linear ----
// Dense and quantised products for few rows, weights dequantised in registers and F32
// accumulation: for each group g (one, or one per expert), rows [row_begin[g], row_begin[g+1])
// of the output are x[x_rows ? x_rows[r] : r] · W_g^T. `mats` holds the group's matrices
// (one; two with `glu`, then the output is silu(x·G^T) * (x·U^T)). A group whose codes are null
// is skipped. With no table, `single` (and `single_up`) is the one group over rows [0, m).
struct SkinnyArgs {
    const float* x = nullptr;
    int64_t ldx = 0;
    const int32_t* x_rows = nullptr;
    QMatrix single, single_up;
    const QMatrix* table = nullptr;  // on the device: group g's matrix is table[g * stride + first]
    int32_t table_stride = 1, table_first = 0;  // (and its up matrix the next one, with glu)
    const int32_t* row_begin = nullptr;  // [groups + 1] on the device; null: one group [0, m)
    int64_t m = 0;                       // rows when row_begin is null
    int64_t groups = 1;
    int64_t max_rows = 0;  // upper bound of any group's rows (sizes the grid)
    // Tiles (from moe_sort): when set, grid row y computes tile y < *tile_count, the rows
    // [tiles[2y + 1], min(+tile_rows, row_begin[g + 1])) of group g = tiles[2y]; max_tiles
    // bounds *tile_count. Only the groups that have rows cost a block.
    const int32_t* tiles = nullptr;
    const int32_t* tile_count = nullptr;
    int64_t max_tiles = 0;
    int32_t tile_rows = 16;  // 4, 8 or 16 (skinny_linear), 16 or 64 (grouped_mma)
    bool glu = false;
    int64_t n = 0, k = 0;
    float* out = nullptr;
    int64_t ldo = 0;
    // Workspace of a dense product whose K may be split over blocks (KernelChoices::
    // skinny_split_blocks): F32 sums of each share, and one counter per column block, zero
    // between launches (the last block of each resets its own). Null: never split.
    float* split_partials = nullptr;
    int64_t split_floats = 0;
    uint32_t* split_counters = nullptr;
    int64_t split_counter_count = 0;
};
// kc.skinny: v2 (16-byte loads, K split over lanes, x staged in shared memory) for tiles of at
// most four rows and dense products of at most 16 where it applies, or v1 throughout.
void skinny_linear(QFormat f, const SkinnyArgs& a, const KernelChoices& kc, cudaStream_t s);
// The same grouped product on the tensor cores (BF16 operands, F32 accumulation) for tiles of
// at most kGroupedMmaRows rows; needs a.tiles, a.table, K a multiple of 32 and 16-byte x rows
// (grouped_mma_fits). Two kernels: v1 (64-row tiles, one K step of 32 at a time) and v2 (the
// default, kc.grouped_mma: 16- or 64-row tiles, the stored weights copied with cp.async K steps
// ahead), which runs where the table's matrices allow (v2_reads: every held matrix passes
// grouped_mma_v2_reads) and a.tile_rows is 16 or 64; elsewhere v1 takes any tile height up to 64.
constexpr int32_t kGroupedMmaRows = 64;
bool grouped_mma_fits(const SkinnyArgs& a);
void grouped_mma(QFormat f, const SkinnyArgs& a, bool v2_reads, const KernelChoices& kc,
                 cudaStream_t s);
// Whether v2 can read `w`: 16-byte code rows, and scale blocks of 16 columns at phase 0 with
// 4-byte scale rows (NVFP4) or of a multiple of 16 at a phase that is one (FP8, INT4).
bool grouped_mma_v2_reads(QFormat f, const QMatrix& w);
// The tile height for experts of mean_rows rows: 16 up to kc.mma_short_tile_rows rows and 64
// past them with v2, kGroupedMmaRows with v1 (or matrices v2 cannot read). (Whether the tensor
// cores take a step's experts at all: KernelChoices::moe_tensor_cores.)
int32_t grouped_mma_tile_rows(int64_t mean_rows, bool v2_reads, const KernelChoices& kc);
// Sets v2's shared memory limits (once; outside graph capture, as the expert tables are built).
void grouped_mma_prepare();
// Expands rows [r0, r1) of `w` to BF16 rows of w.cols at `out`; with `residual`, each value
// minus its BF16 rounding instead (the low part of an F32 value kept as two BF16 numbers).
void dequant_bf16(QFormat f, const QMatrix& w, int64_t r0, int64_t r1, uint16_t* out,
                  cudaStream_t s, bool residual = false);

// ---- MLA ----
// Positions, slots and the block tables of the step, as begin_step uploaded them.
struct StepView {
    const int32_t* positions = nullptr;    // [T]
    const int64_t* slots = nullptr;        // [T]
    const int32_t* row_seq = nullptr;      // [T] sequence of each row
    const int32_t* q_begin = nullptr;      // [S]
    const int32_t* q_len = nullptr;        // [S]
    const int32_t* ctx_len = nullptr;      // [S]
    const int64_t* ctx_prefix = nullptr;   // [S + 1] exclusive prefix of ctx_len
    const int64_t* table_begin = nullptr;  // [S + 1] each sequence's blocks in `tables`
    const int32_t* tables = nullptr;
};
enum class KvType : int32_t { F32 = 0, Bf16 = 1, Fp8 = 2 };
struct KvView {
    void* data = nullptr;  // [blocks, block_size, latent + rope]
    KvType type = KvType::Bf16;
    float scale = 1.0f;
    int64_t block_size = 0, latent = 0, rope = 0;
};
struct RopeView {
    const float* inv_freq = nullptr;  // [dim / 2]
    int64_t dim = 0;
    float attention_factor = 1.0f;
    bool half_split = false;
};
void rope(float* q, int64_t tokens, int64_t heads, int64_t width, int64_t offset, const RopeView& r,
          const StepView& st, cudaStream_t s);
// The queries a cache append also rotates (cache_append_kernel): columns [offset, offset +
// rope dims) of q [tokens, heads, width]; none when q is null.
struct QRope {
    float* q = nullptr;
    int64_t heads = 0, width = 0, offset = 0;
};
void cache_append(const float* ckv, int64_t tokens, const void* norm, bool norm_bf16, float eps,
                  const RopeView& r, const KvView& kv, const StepView& st, const QRope& q,
                  cudaStream_t s);
// Context positions [pos_begin, pos_end) of sequences [seq_begin, seq_end) (each clipped to
// its ctx_len) as F32 rows of latent and k_rot, sequence after sequence: the whole contexts
// (pos_begin 0, pos_end the longest), or a piece of one sequence's.
void gather_context(const KvView& kv, const StepView& st, int64_t seq_begin, int64_t seq_end,
                    int64_t pos_begin, int64_t pos_end, float* latent, float* k_rot,
                    cudaStream_t s);
// Flash-style attention with an online softmax, one block per (query row, head), causal by
// position. Naive form: keys kv[c, h, :dn] ++ k_rot[c], values kv[c, h, dn:]; absorbed form:
// keys cache latent ++ rope, values the latent, read from the paged cache.
struct AttnArgs {
    const float* q = nullptr;       // naive: q [T, H, dq]; absorbed: q_lat [T, H, latent]
    const float* q_rope = nullptr;  // absorbed: q [T, H, dq] (rope at nope_dim)
    int64_t heads = 0, dq = 0, nope = 0, dv = 0;
    const float* kv = nullptr;     // naive
    const float* k_rot = nullptr;  // naive [C, dr]
    int64_t dr = 0;
    KvView cache;                        // absorbed
    int64_t row_begin = 0, row_end = 0;  // query rows
    int64_t seq_begin = 0;
    int64_t context = 0;  // absorbed: the longest context of the sequences (decode_long_context)
    float scale = 1.0f;
    float* out = nullptr;  // [T, H, dv]
    // Absorbed form: each (row, head) split over `splits` blocks of keys (flash decoding) when
    // rows x heads alone would leave the GPU idle; `part` [T, H, splits, part_stride] holds
    // each block's unnormalised values, running max and sum (at dv, dv + 1), combined by a
    // second kernel. part_stride: dv + 2 rounded up to 4 floats (16-byte rows).
    int64_t splits = 1;
    float* part = nullptr;
    int64_t part_stride = 0;
    // Naive form, one piece of one sequence's context (when lse is set): kv and k_rot hold
    // context positions [ctx_begin, ctx_end) of sequence seq_begin; lse [q_len, H] carries each
    // row's log-sum-exp between pieces, read with `out` when `accumulate` (Ops::
    // mla_attention_naive_piece).
    int64_t ctx_begin = 0, ctx_end = 0;
    float* lse = nullptr;
    bool accumulate = false;
};
void attention_naive(const AttnArgs& a, const StepView& st, cudaStream_t s);
// The naive (prefill) form's second version (prefill_attention.cu): a block per 32 query rows of
// one sequence and one head, key and value tiles through shared memory, F32 throughout.
// Sequences [a.seq_begin, a.seq_begin + seqs), the longest with max_q_len rows. Returns false,
// launching nothing, for shapes or alignments it does not take (version 1 then runs).
bool attention_prefill(const AttnArgs& a, const StepView& st, int64_t seqs, int64_t max_q_len,
                       cudaStream_t s);
// (CudaOps runs version 1 throughout when KernelChoices::prefill_attention is V1.)
// The absorbed form's kernels: version 2, tiles of keys through shared memory, a block per (row,
// head, split), splits sized on the device; version 3, the tensor cores with 16 heads a block
// (decode_attention_mma.cu; other caches and shapes run version 2). kc.decode_attention chooses
// (by default 3 from kc.decode_mma_blocks blocks, rows x head groups, else 2) and
// kc.decode_threads version 2's threads a block.
void attention_absorbed(const AttnArgs& a, const StepView& st, const KernelChoices& kc,
                        cudaStream_t s);
// Whether a kernel takes a's cache layout (version 2: latent widths a multiple of 4 up to 1,024,
// 16-byte entries; version 3 where it runs). CudaOps checks before attention_absorbed.
bool decode_attention_takes(const AttnArgs& a, const KernelChoices& kc);
// The split count of each (query row, head) pair of `a` (every field but `part` and `splits`
// set; fixed by the shape, so a captured graph keeps it): at most 32, for the kernel that runs.
int64_t attention_splits(const AttnArgs& a, const KernelChoices& kc);
// The third version (decode_attention_mma.cu): whether it takes a's cache and shape (a BF16
// cache, latent a multiple of 64 up to 512, 16-byte aligned rows), its splits for `rows` query
// rows of `heads` heads, and its launch (the join of splits is the caller's).
bool decode_mma_takes(const AttnArgs& a);
int64_t decode_mma_splits(int64_t rows, int64_t heads, const KernelChoices& kc);
void attention_absorbed_mma(const AttnArgs& a, const StepView& st, cudaStream_t s);
// q_lat[t, h, l] = sum_d q[t, h, d] kv_b[h (dn + dv) + d, l] (kv_b BF16 [H (dn + dv), latent]).
void absorb_q(const float* q, int64_t tokens, int64_t heads, int64_t dq, const uint16_t* kv_b,
              int64_t dn, int64_t dv, int64_t latent, float* q_lat, cudaStream_t s);
// out[t, h, v] = sum_l o_lat[t, h, l] kv_b[h (dn + dv) + dn + v, l].
void absorb_v(const float* o_lat, int64_t tokens, int64_t heads, const uint16_t* kv_b, int64_t dn,
              int64_t dv, int64_t latent, float* out, cudaStream_t s);

// ---- MoE ----
struct RouteArgs {
    const float* logits = nullptr;  // [T, E]
    const float* bias = nullptr;    // [E]
    int64_t tokens = 0, experts = 0, top_k = 0, n_group = 1, topk_group = 1;
    bool norm_topk_prob = true;
    float scaling = 1.0f;
    int32_t* ids = nullptr;  // [T, k]
    float* weights = nullptr;
};
void moe_route(const RouteArgs& a, cudaStream_t s);
// Groups the (token, choice) pairs by expert on the device (counts [E]: workspace): offsets [E +
// 1], sorted_token [T k] (the token of each sorted row) and pair_row [T k] (each pair's row); and
// the tiles of SkinnyArgs: (expert, first row) for every tile_rows rows of each expert that has
// rows, *tile_count of them (at most moe_max_tiles).
void moe_sort(const int32_t* ids, int64_t pairs, int64_t top_k, int64_t experts, int32_t* counts,
              int32_t* offsets, int32_t* sorted_token, int32_t* pair_row, int32_t tile_rows,
              int32_t* tiles, int32_t* tile_count, const KernelChoices& kc, cudaStream_t s);
// (Decode-size steps, up to 8,192 pairs and 4,096 experts, group in one single-block kernel
// unless kc.moe_sort_fused is false.)
// Experts with c rows need ceil(c / R) tiles: at most pairs / R + (experts that have rows).
inline int64_t moe_max_tiles(int64_t pairs, int64_t experts, int32_t tile_rows) {
    return pairs / tile_rows + (pairs < experts ? pairs : experts) + 1;
}
// out[t] = sum_j w[t, j] * y[pair_row[t, j]] over pairs whose expert is held (held[e] != 0);
// with add, out[t] + that sum.
void moe_combine(const float* y, int64_t hidden, const int32_t* ids, const float* w,
                 const int32_t* pair_row, const uint8_t* held, int64_t tokens, int64_t top_k,
                 bool add, float* out, cudaStream_t s);

// Sampling (sampling_kernels.cu): the rows' edits in place (host rows skipped), those of
// [first, first + count) of the step's list, which `edits` holds from its element `first` (the
// list goes up in pieces of a fixed buffer); then, for the m rows listed in `rows` (device),
// sorted choice into tokens[rows[j]]. The workspace holds sort_workspace_bytes(m, vocab) bytes.
void apply_edits(float* logits, int64_t rows, int64_t vocab, const SampleRow* meta,
                 const LogitEdit* edits, int64_t first, int64_t count, cudaStream_t s);
// Structured output: the logits of every masked row (meta[r].mask >= 0, not host) whose token's
// bit is clear in masks[meta[r].mask * words, + words) become -inf.
void apply_token_masks(float* logits, int64_t rows, int64_t vocab, const SampleRow* meta,
                       const uint32_t* masks, int32_t words, cudaStream_t s);
size_t sort_workspace_bytes(int64_t m, int64_t vocab);
cudaError_t sample_sorted(const float* logits, int64_t vocab, const int32_t* rows, int64_t m,
                          const SampleRow* meta, int32_t* tokens, void* workspace, size_t bytes,
                          cudaStream_t s);

// The sorted choice of sample_sorted on lists already sorted (logit descending, ties by id):
// for each j < m, row rows[j] (meta, tokens) chooses from keys / vals [slots[j] * count, + count).
void choose_among_sorted(const float* keys, const int32_t* vals, int64_t count,
                         const int32_t* slots, const int32_t* rows, int64_t m,
                         const SampleRow* meta, int32_t* tokens, cudaStream_t s);

// Sampling across vocabulary slices (candidate_kernels.cu; ops/sample_candidates.h is the
// reference): for each j < m, the best k of row rows[j] of logits [.., shard] (logit descending,
// ties by column) into out [m, 2k] row j: k logits, then k ids (vocab_begin + column) as int32
// bits.
void slice_topk(const float* logits, int64_t shard, const int32_t* rows, int64_t m, int64_t k,
                int64_t vocab_begin, float* out, cudaStream_t s);
// Each candidate row j's lists of gathered [m, world * 2k] merged into keys / vals [m, world * k],
// sorted (logit descending, ties by id); tokens[rows[j]] = its first id where meta[rows[j]] is
// greedy.
void merge_candidates(const float* gathered, int64_t world, int64_t m, int64_t k,
                      const int32_t* rows, const SampleRow* meta, float* keys, int32_t* vals,
                      int32_t* tokens, cudaStream_t s);

// Prompt logprobs (logprob_kernels.cu; the arithmetic of ops/logprob_rows.h): for each of the n
// rows of logits [slices, n, shard] (columns from vocab on ignored), target[i] the logprob of
// targets[i], and top_ids / top [n, top_n] (top_n at most 20) its best tokens and theirs.
void logprob_rows(const float* logits, int64_t slices, int64_t n, int64_t shard, int64_t vocab,
                  const int32_t* targets, int64_t top_n, float* target, int32_t* top_ids,
                  float* top, cudaStream_t s);

}  // namespace myriad::cuda
