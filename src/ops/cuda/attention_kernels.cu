// MLA on the GPU: rotary embedding, the paged latent cache (append, gather), attention in the
// naive (prefill) and absorbed (decode) forms, and the absorption products with kv_b_proj.
// reference.md §1.3 and §1.6.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "ops/cuda/decode_splits.cuh"
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

namespace {

// cos and sin of a float32 angle in double, as transformers' float32 path rounds them.
__device__ __forceinline__ void rotate_pair(float* a, float* b, float angle, float factor) {
    double s, c;
    sincos(static_cast<double>(angle), &s, &c);
    const float cf = static_cast<float>(c) * factor, sf = static_cast<float>(s) * factor;
    const float x0 = *a, x1 = *b;
    *a = x0 * cf - x1 * sf;
    *b = x1 * cf + x0 * sf;
}

__global__ void rope_kernel(float* q, int64_t tokens, int64_t heads, int64_t width, int64_t offset,
                            RopeView r, const int32_t* positions) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    const int64_t half = r.dim / 2;
    const int64_t n = tokens * heads * half;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t t = i / (heads * half), h = (i / half) % heads, p = i % half;
        float* x = q + (t * heads + h) * width + offset;
        float* a = r.half_split ? x + p : x + 2 * p;
        float* b = r.half_split ? x + p + half : x + 2 * p + 1;
        rotate_pair(a, b, r.inv_freq[p] * static_cast<float>(positions[t]), r.attention_factor);
    }
}

__device__ __forceinline__ int64_t entry_width(const KvView& kv) {
    return kv.latent + kv.rope;
}

__device__ __forceinline__ void store_kv(const KvView& kv, int64_t slot, int64_t i, float v) {
    const int64_t at = slot * entry_width(kv) + i;
    if (kv.type == KvType::F32)
        static_cast<float*>(kv.data)[at] = v;
    else if (kv.type == KvType::Bf16)
        static_cast<uint16_t*>(kv.data)[at] = f32_to_bf16_bits(v);
    else
        static_cast<uint8_t*>(kv.data)[at] = f32_to_e4m3(v * (1.0f / kv.scale));
}

__device__ __forceinline__ float load_kv(const KvView& kv, int64_t slot, int64_t i) {
    const int64_t at = slot * entry_width(kv) + i;
    if (kv.type == KvType::F32) return static_cast<const float*>(kv.data)[at];
    if (kv.type == KvType::Bf16) return bf16_bits_to_f32(static_cast<const uint16_t*>(kv.data)[at]);
    return e4m3_to_f32(static_cast<const uint8_t*>(kv.data)[at]) * kv.scale;
}

// The cache slot holding position p of sequence s.
__device__ __forceinline__ int64_t context_slot(const KvView& kv, const StepView& st, int64_t s,
                                                int64_t p) {
    const int32_t block = st.tables[st.table_begin[s] + p / kv.block_size];
    return int64_t(block) * kv.block_size + p % kv.block_size;
}

// One block per new token: latent = rmsnorm(ckv[:latent]), k_rot = rope(ckv[latent:]); and the
// token's queries rotated in place (qr.q), with rope_kernel's arithmetic. The constants (the
// norm's weights, the rope's frequencies) and the step's inputs (slot, position) are loaded
// before waiting for the previous kernel, and every element this block reads after it in one
// round of loads (the queries in rounds of kAppendQ pairs a thread): it took about 6 us at
// batch 1 as loops with a round trip per element (CUPTI timeline, H200). Latent widths up to
// kAppendThreads * kAppendLatent, rope widths up to 2 * kAppendThreads (CudaOps checks).
constexpr int kAppendThreads = 256, kAppendLatent = 4, kAppendQ = 8;
__global__ void __launch_bounds__(kAppendThreads)
    cache_append_kernel(const float* ckv, const void* norm, bool norm_bf16, float eps, RopeView r,
                        KvView kv, StepView st, QRope qr) {
    const int64_t t = blockIdx.x, width = entry_width(kv), half = kv.rope / 2;
    const int tid = threadIdx.x;
    float g[kAppendLatent];
#pragma unroll
    for (int k = 0; k < kAppendLatent; ++k) {
        const int64_t i = tid + int64_t(k) * kAppendThreads;
        g[k] = i >= kv.latent ? 0.0f
               : norm_bf16    ? bf16_bits_to_f32(static_cast<const uint16_t*>(norm)[i])
                              : static_cast<const float*>(norm)[i];
    }
    const int64_t slot = st.slots[t];
    const float pos = static_cast<float>(st.positions[t]);
    const float kfreq = tid < half ? r.inv_freq[tid] : 0.0f;
    pdl_wait();  // launched early (launch_pdl, pdl.cuh): the rest follows the previous kernel
    pdl_launch_dependents();
    const float* src = ckv + t * width;
    float v[kAppendLatent];
#pragma unroll
    for (int k = 0; k < kAppendLatent; ++k) {
        const int64_t i = tid + int64_t(k) * kAppendThreads;
        v[k] = i < kv.latent ? src[i] : 0.0f;
    }
    const int64_t ia = r.half_split ? tid : 2 * tid, ib = r.half_split ? tid + half : 2 * tid + 1;
    float ka = 0.0f, kb = 0.0f;
    if (tid < half) {
        ka = src[kv.latent + ia];
        kb = src[kv.latent + ib];
    }
    // The queries' pairs: a round of kAppendQ a thread loaded, then rotated and stored.
    const int64_t qhalf = r.dim / 2, items = qr.q ? qr.heads * qhalf : 0;
    for (int64_t first = tid; first < items; first += int64_t(kAppendQ) * kAppendThreads) {
        float qa[kAppendQ], qb[kAppendQ], f[kAppendQ];
        float* pa[kAppendQ];
        float* pb[kAppendQ];
#pragma unroll
        for (int k = 0; k < kAppendQ; ++k) {
            const int64_t i = first + int64_t(k) * kAppendThreads;
            pa[k] = pb[k] = nullptr;
            qa[k] = qb[k] = f[k] = 0.0f;
            if (i < items) {
                const int64_t h = i / qhalf, p = i % qhalf;
                float* x = qr.q + (t * qr.heads + h) * qr.width + qr.offset;
                pa[k] = r.half_split ? x + p : x + 2 * p;
                pb[k] = r.half_split ? x + p + qhalf : x + 2 * p + 1;
                qa[k] = *pa[k];
                qb[k] = *pb[k];
                f[k] = r.inv_freq[p];
            }
        }
#pragma unroll
        for (int k = 0; k < kAppendQ; ++k) {
            if (pa[k]) {
                rotate_pair(&qa[k], &qb[k], f[k] * pos, r.attention_factor);
                *pa[k] = qa[k];
                *pb[k] = qb[k];
            }
        }
    }

    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kAppendLatent; ++k) ss += v[k] * v[k];
    ss = block_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(kv.latent) + eps);
#pragma unroll
    for (int k = 0; k < kAppendLatent; ++k) {
        const int64_t i = tid + int64_t(k) * kAppendThreads;
        if (i < kv.latent) store_kv(kv, slot, i, g[k] * (v[k] * inv));
    }
    if (tid < half) {
        rotate_pair(&ka, &kb, kfreq * pos, r.attention_factor);
        store_kv(kv, slot, kv.latent + ia, ka);
        store_kv(kv, slot, kv.latent + ib, kb);
    }
}

// Block (position pos_begin + x, sequence): the cached entry as F32 rows of latent and k_rot.
// (Several sequences come with pos_begin 0; a piece of one sequence's context with any.)
__global__ void gather_context_kernel(KvView kv, StepView st, int64_t seq_begin, int64_t pos_begin,
                                      float* latent, float* k_rot) {
    const int64_t s = seq_begin + blockIdx.y, p = pos_begin + blockIdx.x;
    if (p >= st.ctx_len[s]) return;
    const int64_t row = st.ctx_prefix[s] - st.ctx_prefix[seq_begin] + p - pos_begin;
    const int64_t slot = context_slot(kv, st, s, p);
    for (int64_t i = threadIdx.x; i < kv.latent + kv.rope; i += blockDim.x) {
        const float v = load_kv(kv, slot, i);
        if (i < kv.latent)
            latent[row * kv.latent + i] = v;
        else
            k_rot[row * kv.rope + i - kv.latent] = v;
    }
}

constexpr int kAttnThreads = 128;
constexpr int kAttnWarps = kAttnThreads / kWarp;
constexpr int kTile = 64;          // keys per online-softmax step
constexpr int kMaxVPerThread = 4;  // value dims up to 512

// The naive form's first version: attention of one (query row, head) with an online softmax
// over tiles of keys kv[c, h, :dn] ++ k_rot[c], values kv[c, h, dn:]; the query is staged in
// shared memory. (The absorbed form's first version, this kernel over the paged cache, was
// deleted: version 2 took 6.6 + 2.2 us a layer where it took 22.1 + 7.2 at batch 1 of Moonlight,
// bench/README.md, and versions 2 and 3 take every cache layout the models have.)
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnArgs a, StepView st) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    extern __shared__ float smem[];
    __shared__ float scores[kTile];
    const int64_t row = a.row_begin + blockIdx.x, h = blockIdx.y;
    const int64_t s = st.row_seq[row];
    const int64_t n_all = int64_t(st.positions[row]) + 1;  // causal: positions 0..pos
    int64_t k0 = 0, n = n_all;
    // A piece of the naive form's context (a.lse set): keys [ctx_begin, min(pos + 1, ctx_end)),
    // the piece's first key in kv row 0; maybe none.
    const bool piece = a.lse != nullptr;
    if (piece) {
        k0 = a.ctx_begin;
        n = n_all < a.ctx_end ? n_all : a.ctx_end;
    }
    float* qs = smem;
    for (int64_t i = threadIdx.x; i < a.dq; i += blockDim.x)
        qs[i] = a.q[(row * a.heads + h) * a.dq + i];
    __syncthreads();
    const int64_t ctx_base = st.ctx_prefix[s] - st.ctx_prefix[a.seq_begin] - (piece ? k0 : 0);
    const int64_t kv_width = a.nope + a.dv;  // naive kv rows
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;

    float m = -INFINITY, l = 0.0f, acc[kMaxVPerThread];
#pragma unroll
    for (int i = 0; i < kMaxVPerThread; ++i) acc[i] = 0.0f;
    // The earlier pieces' normalised output with their log-sum-exp as the running max: the
    // running sum is then 1.
    const int64_t lse_at = piece ? (row - st.q_begin[s]) * a.heads + h : 0;
    if (piece && a.accumulate && a.lse[lse_at] != -INFINITY) {
        m = a.lse[lse_at];
        l = 1.0f;
#pragma unroll
        for (int i = 0; i < kMaxVPerThread; ++i) {
            const int64_t d = threadIdx.x + int64_t(i) * kAttnThreads;
            if (d < a.dv) acc[i] = a.out[(row * a.heads + h) * a.dv + d];
        }
    }

    for (int64_t t0 = k0; t0 < n; t0 += kTile) {
        const int64_t cnt = n - t0 < kTile ? n - t0 : kTile;
        for (int64_t jj = warp; jj < cnt; jj += kAttnWarps) {
            const int64_t j = t0 + jj;
            float dot = 0.0f;
            const int64_t c = ctx_base + j;
            const float* kn = a.kv + (c * a.heads + h) * kv_width;
            for (int64_t i = lane; i < a.nope; i += kWarp) dot += qs[i] * kn[i];
            for (int64_t i = lane; i < a.dr; i += kWarp)
                dot += qs[a.nope + i] * a.k_rot[c * a.dr + i];
            dot = warp_sum(dot);
            if (lane == 0) scores[jj] = dot * a.scale;
        }
        __syncthreads();
        float tile_max = -INFINITY;
        for (int64_t jj = 0; jj < cnt; ++jj) tile_max = fmaxf(tile_max, scores[jj]);
        const float m_new = fmaxf(m, tile_max);
        const float corr = expf(m - m_new);
        l *= corr;
#pragma unroll
        for (int i = 0; i < kMaxVPerThread; ++i) acc[i] *= corr;
#pragma unroll 4
        for (int64_t jj = 0; jj < cnt; ++jj) {
            const float p = expf(scores[jj] - m_new);
            l += p;
            const int64_t j = t0 + jj;
#pragma unroll
            for (int i = 0; i < kMaxVPerThread; ++i) {
                const int64_t d = threadIdx.x + int64_t(i) * kAttnThreads;
                if (d < a.dv)
                    acc[i] += p * a.kv[((ctx_base + j) * a.heads + h) * kv_width + a.nope + d];
            }
        }
        m = m_new;
        __syncthreads();  // `scores` is rewritten by the next tile
    }
    // (A piece's row that has seen no key yet: out 0, lse -inf.)
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVPerThread; ++i) {
        const int64_t d = threadIdx.x + int64_t(i) * kAttnThreads;
        if (d < a.dv) a.out[(row * a.heads + h) * a.dv + d] = acc[i] * inv;
    }
    if (piece && threadIdx.x == 0) a.lse[lse_at] = l > 0.0f ? m + logf(l) : -INFINITY;
}

// Joins of the absorbed form's splits: out = sum_z acc_z e^(m_z - M) / sum_z l_z e^(m_z - M),
// at most kMaxSplits splits.
constexpr int kMaxSplits = 64;

// Lane `lane`'s share of the weights e^(m_z - M) / sum_z l_z e^(m_z - M) of a row and head's
// splits (their partials at p, `width` floats apart, m and l after the dv values): w[i] for split
// lane + 32 i, 0 past `splits`. A whole warp calls it.
__device__ __forceinline__ void split_weights(const float* p, int64_t width, int64_t dv,
                                              int64_t splits, int lane,
                                              float w[kMaxSplits / kWarp]) {
    float mz[kMaxSplits / kWarp], lz[kMaxSplits / kWarp];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kMaxSplits / kWarp; ++i) {
        const int64_t z = lane + int64_t(i) * kWarp;
        mz[i] = z < splits ? p[z * width + dv] : -INFINITY;
        lz[i] = z < splits ? p[z * width + dv + 1] : 0.0f;
        mx = fmaxf(mx, mz[i]);
    }
    mx = warp_max(mx);
    float den = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxSplits / kWarp; ++i) {
        w[i] = mz[i] == -INFINITY ? 0.0f : expf(mz[i] - mx);
        den += lz[i] * w[i];
    }
    den = warp_sum(den);
#pragma unroll
    for (int i = 0; i < kMaxSplits / kWarp; ++i) w[i] = w[i] / den;
}

// The second version's join: a block per (row, head, 128 value elements), a thread per value
// element. Every load is issued at once (the thread's value in each split, and each warp's copy
// of the splits' maxima and sums), so the join costs one round trip to memory; the one above,
// 16 blocks at batch 1 walking the splits eight at a time, took about 10 us after the attention
// (CUPTI timeline, H200). Only the splits that have keys are read, and a row whose keys all fell
// to split 0 is skipped: that split wrote the output itself.
constexpr int kJoinThreads = 128;
__global__ void __launch_bounds__(kJoinThreads) join_splits_kernel(AttnArgs a, StepView st) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    const int64_t r = blockIdx.x, h = blockIdx.y;
    const int64_t width = a.part_stride;
    const float* p = a.part + (r * a.heads + h) * a.splits * width;
    const int64_t splits =
        decode_active_splits(int64_t(st.positions[a.row_begin + r]) + 1, a.splits);
    if (splits <= 1) return;
    const int64_t d = int64_t(blockIdx.z) * kJoinThreads + threadIdx.x;
    const int lane = threadIdx.x % kWarp;
    float v[kMaxSplits];
#pragma unroll
    for (int z = 0; z < kMaxSplits; ++z) v[z] = z < splits && d < a.dv ? p[z * width + d] : 0.0f;
    float e[kMaxSplits / kWarp];  // split lane + 32 i's weight
    split_weights(p, width, a.dv, splits, lane, e);
    float num = 0.0f;
#pragma unroll
    for (int z = 0; z < kMaxSplits; ++z) {
        const float wz = __shfl_sync(0xffffffffu, e[z / kWarp], z % kWarp);
        if (z < splits) num += v[z] * wz;
    }
    if (d < a.dv) a.out[((a.row_begin + r) * a.heads + h) * a.dv + d] = num;
}

// The join for many rows (the third version's): a block per (row, head), a thread per four
// value elements (16-byte loads; part rows are 16-byte aligned). The block above per (row,
// head, 128 elements) made 4,096 blocks at batch 64 with four splits, about six waves of
// dependent loads: 25 us a layer (CUPTI, H200), as long as the attention. Here 1,024 blocks
// fit about one wave, and the first eight splits' values are loaded before the weights are
// known.
constexpr int kWideJoinThreads = 128, kWideJoinBatch = 8;
__global__ void __launch_bounds__(kWideJoinThreads)
    join_splits_wide_kernel(AttnArgs a, StepView st) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    __shared__ float weight[kMaxSplits];
    const int64_t r = blockIdx.x, h = blockIdx.y;
    const int64_t width = a.part_stride;
    const float* p = a.part + (r * a.heads + h) * a.splits * width;
    const int64_t splits =
        decode_active_splits(int64_t(st.positions[a.row_begin + r]) + 1, a.splits);
    if (splits <= 1) return;
    const int tid = threadIdx.x;
    const int64_t quads = a.dv / 4;
    float4 v[kWideJoinBatch];
    auto load = [&](int64_t z0, int64_t q) {
#pragma unroll
        for (int j = 0; j < kWideJoinBatch; ++j)
            v[j] = z0 + j < splits && q < quads
                       ? *reinterpret_cast<const float4*>(p + (z0 + j) * width + 4 * q)
                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    };
    load(0, tid);
    if (tid < kWarp) {
        float e[kMaxSplits / kWarp];
        split_weights(p, width, a.dv, splits, tid, e);
#pragma unroll
        for (int i = 0; i < kMaxSplits / kWarp; ++i) weight[tid + i * kWarp] = e[i];
    }
    __syncthreads();
    for (int64_t q = tid; q < quads; q += kWideJoinThreads) {
        if (q != tid) load(0, q);
        float4 num = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int64_t z0 = 0; z0 < splits; z0 += kWideJoinBatch) {
            if (z0 > 0) load(z0, q);
#pragma unroll
            for (int j = 0; j < kWideJoinBatch; ++j) {
                const float wz = z0 + j < splits ? weight[z0 + j] : 0.0f;
                num.x += v[j].x * wz;
                num.y += v[j].y * wz;
                num.z += v[j].z * wz;
                num.w += v[j].w * wz;
            }
        }
        *reinterpret_cast<float4*>(a.out + ((a.row_begin + r) * a.heads + h) * a.dv + 4 * q) = num;
    }
}

// ---- Absorbed decode attention, second version ----
// The first version (deleted) was bound by latency: each key waited on its own block-table
// lookup, its bytes came in 2-byte loads, and the value loop read the keys again. Here a block
// looks up a tile's slots at once (lane i of warp w: key w + 8i) and copies the tile's entries
// whole into shared memory with 16-byte asynchronous copies, two tiles in flight; scores,
// softmax and values then read shared memory only, each key's bytes read from memory once.
// Threads (128 or 256) a block: the kernel is bound by each warp's chain of dependent
// instructions (ncu, H200, batch 1 with 4 warps: 1.5 instructions a cycle, 9 warps active per
// multiprocessor, 11.7 us for 17 splits of 32 keys). Eight warps halve each one's share of a
// tile where blocks are few (batch 1: 297 -> 244 us a step), four fit more blocks where they
// are many (batch 64, 64 x 16 blocks of 34 tiles: 234 us a layer with four, 267 with eight).
constexpr int64_t kDecMaxTile = 32;        // keys per stage: the softmax takes a lane per key
constexpr int64_t kDecStageBytes = 20480;  // two stages and the query under 48 KB
constexpr int64_t kDecSmemLimit = 48 * 1024;

// Where things lie in the block's shared memory: the query (F32), two stages of `tile` cache
// entries, the tile's scores and weights, and the value partials of groups 1.. for the end.
// tile == 0: this cache layout is not handled (decode_attention_takes says so beforehand).
struct DecodeLayout {
    int64_t entry_bytes = 0;
    int32_t tile = 0;
    // Value threads (group g, quad q) sum keys g, g + groups, ... for latent elements 4q..4q+3.
    int32_t groups = 0;
    int64_t key_off = 0, score_off = 0, prob_off = 0, red_off = 0, bytes = 0;
};

int64_t kv_elem_bytes(KvType t) {
    return t == KvType::F32 ? 4 : (t == KvType::Bf16 ? 2 : 1);
}

DecodeLayout decode_layout(const KvView& kv, int threads) {
    const int warps = threads / kWarp;
    DecodeLayout L;
    const int64_t dk = kv.latent + kv.rope;
    L.entry_bytes = dk * kv_elem_bytes(kv.type);
    // 16-byte copies need 16-byte entries; values are read in quads of the latent.
    if (kv.latent < 4 || kv.latent % 4 != 0 || kv.latent > 4 * threads || L.entry_bytes % 16 != 0 ||
        reinterpret_cast<uintptr_t>(kv.data) % 16 != 0)
        return L;
    const int64_t tile =
        std::min<int64_t>(kDecMaxTile, kDecStageBytes / L.entry_bytes) / warps * warps;
    if (tile < warps) return L;
    L.groups = static_cast<int32_t>(threads / (kv.latent / 4));
    L.key_off = (dk * 4 + 15) / 16 * 16;
    L.score_off = L.key_off + 2 * tile * L.entry_bytes;
    L.prob_off = L.score_off + tile * 4;
    L.red_off = L.prob_off + tile * 4;
    L.bytes = L.red_off + (L.groups - 1) * kv.latent * 4;
    if (L.bytes > kDecSmemLimit) return L;
    L.tile = static_cast<int32_t>(tile);
    return L;
}

__device__ __forceinline__ float2 e4m3x2_to_float2(uint32_t two) {
    const __half2_raw h =
        __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two & 0xffffu), __NV_E4M3);
    return __half22float2(__half2(h));
}

// q[0..n) times the n elements in 16 bytes of an entry (n = 16 / element bytes), FP8 unscaled.
template <KvType T>
__device__ __forceinline__ float dot16(const float* q, uint4 r) {
    const uint32_t w[4] = {r.x, r.y, r.z, r.w};
    float d = 0.0f;
    if constexpr (T == KvType::F32) {
        const float4 a = *reinterpret_cast<const float4*>(q);
        d = a.x * __uint_as_float(w[0]) + a.y * __uint_as_float(w[1]) +
            a.z * __uint_as_float(w[2]) + a.w * __uint_as_float(w[3]);
    } else if constexpr (T == KvType::Bf16) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const float4 a = *reinterpret_cast<const float4*>(q + 4 * i);
            d += a.x * __uint_as_float(w[2 * i] << 16) +
                 a.y * __uint_as_float(w[2 * i] & 0xffff0000u) +
                 a.z * __uint_as_float(w[2 * i + 1] << 16) +
                 a.w * __uint_as_float(w[2 * i + 1] & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float4 a = *reinterpret_cast<const float4*>(q + 4 * i);
            const float2 lo = e4m3x2_to_float2(w[i]), hi = e4m3x2_to_float2(w[i] >> 16);
            d += a.x * lo.x + a.y * lo.y + a.z * hi.x + a.w * hi.y;
        }
    }
    return d;
}

// Latent elements 4q..4q+3 of an entry in shared memory, FP8 unscaled.
template <KvType T>
__device__ __forceinline__ float4 load_quad(const unsigned char* entry, int q) {
    if constexpr (T == KvType::F32) {
        return *reinterpret_cast<const float4*>(entry + 16 * q);
    } else if constexpr (T == KvType::Bf16) {
        const uint2 r = *reinterpret_cast<const uint2*>(entry + 8 * q);
        return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u),
                           __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
    } else {
        const uint32_t r = *reinterpret_cast<const uint32_t*>(entry + 4 * q);
        const float2 lo = e4m3x2_to_float2(r), hi = e4m3x2_to_float2(r >> 16);
        return make_float4(lo.x, lo.y, hi.x, hi.y);
    }
}

// Block (row, head, split): the split's keys in tiles of L.tile through shared memory. Writes
// the normalised output when the split holds all of the row's keys, else the partial that
// join_splits_kernel reads; a split without keys returns at once.
// Before waiting for the previous kernel, a block looks up its first two tiles' slots and starts
// copying the keys that earlier steps wrote (every position before the sequence's first new
// one): no kernel of this step writes the step's inputs or those cache entries, so only the
// queries and this step's keys wait. At batch 1 the copies then overlap the absorption of the
// queries, where they had followed it.
template <KvType T, int kDecThreads>
__global__ void __launch_bounds__(kDecThreads)
    decode_attention_kernel(AttnArgs a, StepView st, DecodeLayout L) {
    constexpr int kDecWarps = kDecThreads / kWarp;
    extern __shared__ __align__(16) unsigned char dec_smem[];
    float* qs = reinterpret_cast<float*>(dec_smem);
    unsigned char* keys = dec_smem + L.key_off;
    float* scores = reinterpret_cast<float*>(dec_smem + L.score_off);
    float* probs = reinterpret_cast<float*>(dec_smem + L.prob_off);
    float* red = reinterpret_cast<float*>(dec_smem + L.red_off);
    const KvView& kv = a.cache;
    const int64_t row = a.row_begin + blockIdx.x, h = blockIdx.y;
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;

    const int32_t s = st.row_seq[row];
    const int64_t n_all = int64_t(st.positions[row]) + 1;  // causal: positions 0..pos
    const int64_t chunk = decode_chunk(n_all, a.splits);
    const int64_t k0 = int64_t(blockIdx.z) * chunk;
    if (k0 >= n_all) {
        pdl_wait();  // (never done before the previous kernel: pdl.cuh)
        return;
    }
    const int64_t k1 = k0 + chunk < n_all ? k0 + chunk : n_all;
    const int32_t* table = st.tables + st.table_begin[s];
    const int64_t first_new = int64_t(st.ctx_len[s]) - st.q_len[s];  // this step's keys from here

    const int64_t latent = kv.latent, dk = latent + kv.rope;
    const int64_t eb = L.entry_bytes, nv = eb / 16;
    const int64_t tile = L.tile;
    const int32_t bs = static_cast<int32_t>(kv.block_size);
    // Warp w copies keys w, w + 4, ... of the tile at t0; its lane i looks up the slot of its
    // key i first, so a tile waits on one round of table loads.
    auto lookup = [&](int64_t t0) {
        const int64_t jl = warp + int64_t(kDecWarps) * lane;
        if (jl >= tile || t0 + jl >= k1) return int64_t(0);
        const int32_t p = static_cast<int32_t>(t0 + jl);
        return int64_t(table[p / bs]) * bs + p % bs;
    };
    // The tile's keys at positions [lo, hi).
    auto copy = [&](int64_t t0, int64_t stage, int64_t slot, int64_t lo, int64_t hi) {
        const int64_t cnt = k1 - t0 < tile ? k1 - t0 : tile;
        unsigned char* dst = keys + stage * tile * eb;
        int k = 0;
        for (int64_t j = warp; j < cnt; j += kDecWarps, ++k) {
            const int64_t sk = __shfl_sync(0xffffffffu, slot, k);
            if (t0 + j < lo || t0 + j >= hi) continue;
            const unsigned char* src = static_cast<const unsigned char*>(kv.data) + sk * eb;
            for (int64_t v = lane; v < nv; v += kWarp)
                cp_async16(dst + j * eb + 16 * v, src + 16 * v);
        }
    };

    // The first two tiles' lookups together and their old keys' copies; after the wait the
    // query (latent, then rope) and the new keys. One group per tile keeps wait_group<1> right
    // (the second maybe empty; the first also holds the second tile's old keys).
    const int64_t tiles = (k1 - k0 + tile - 1) / tile;
    const int64_t slot0 = lookup(k0), slot1 = tiles > 1 ? lookup(k0 + tile) : 0;
    copy(k0, 0, slot0, 0, first_new);
    if (tiles > 1) copy(k0 + tile, 1, slot1, 0, first_new);
    pdl_wait();  // launched early (launch_pdl, pdl.cuh): the queries and new keys follow it
    pdl_launch_dependents();
    const float* ql = a.q + (row * a.heads + h) * latent;
    const float* qr = a.q_rope + (row * a.heads + h) * a.dq + a.nope;
    for (int64_t i = tid; i < dk; i += kDecThreads)
        cp_async4(qs + i, i < latent ? ql + i : qr + (i - latent));
    copy(k0, 0, slot0, first_new, k1);
    cp_async_commit();
    if (tiles > 1) copy(k0 + tile, 1, slot1, first_new, k1);
    cp_async_commit();

    constexpr int64_t kPerVec = T == KvType::F32 ? 4 : (T == KvType::Bf16 ? 8 : 16);
    const int nq = static_cast<int>(latent / 4);
    const int group = tid / nq, quad = tid % nq;
    const bool values = group < L.groups;
    const float score_scale = T == KvType::Fp8 ? a.scale * kv.scale : a.scale;
    float m = -INFINITY, l = 0.0f;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t it = 0; it < tiles; ++it) {
        const int64_t t0 = k0 + it * tile;
        const int cnt = static_cast<int>(k1 - t0 < tile ? k1 - t0 : tile);
        const unsigned char* buf = keys + (it & 1) * tile * eb;
        // The slots of the tile after next, looked up now and used after this tile's work.
        const int64_t slot2 = it + 2 < tiles ? lookup(t0 + 2 * tile) : 0;
        cp_async_wait<1>();  // this tile's group (all but the latest)
        __syncthreads();     // every thread's copies visible

        // Scores: warp w takes keys w, w + 8, ..., two at a time (two chains of loads).
        for (int j = warp; j < cnt; j += 2 * kDecWarps) {
            const int j2 = j + kDecWarps < cnt ? j + kDecWarps : j;
            const uint4* e0 = reinterpret_cast<const uint4*>(buf + j * eb);
            const uint4* e1 = reinterpret_cast<const uint4*>(buf + j2 * eb);
            float d0 = 0.0f, d1 = 0.0f;
            for (int v = lane; v < static_cast<int>(nv); v += kWarp) {
                d0 += dot16<T>(qs + v * kPerVec, e0[v]);
                d1 += dot16<T>(qs + v * kPerVec, e1[v]);
            }
            d0 = warp_sum(d0);
            d1 = warp_sum(d1);
            if (lane == 0) {
                scores[j] = d0 * score_scale;
                scores[j2] = d1 * score_scale;  // j2 == j: the same value again
            }
        }
        __syncthreads();

        // Online softmax with a lane per key: every warp finds the same max and sum; warp 0
        // publishes the weights.
        const float sc = lane < cnt ? scores[lane] : -INFINITY;
        const float m_new = fmaxf(m, warp_max(sc));
        const float p = lane < cnt ? expf(sc - m_new) : 0.0f;
        const float corr = expf(m - m_new);
        l = l * corr + warp_sum(p);
        m = m_new;
        if (warp == 0 && lane < cnt) probs[lane] = p;
        __syncthreads();

        if (values) {
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[i] *= corr;
#pragma unroll 4
            for (int j = group; j < cnt; j += L.groups) {
                const float pj = probs[j];
                const float4 v = load_quad<T>(buf + j * eb, quad);
                acc[0] += pj * v.x;
                acc[1] += pj * v.y;
                acc[2] += pj * v.z;
                acc[3] += pj * v.w;
            }
        }
        if (it + 2 < tiles) {
            __syncthreads();  // every warp is done with this stage before it is refilled
            copy(t0 + 2 * tile, it & 1, slot2, 0, k1);
        }
        cp_async_commit();
    }

    if (L.groups > 1) {  // groups 1.. hand their sums to group 0
        if (values && group > 0) {
#pragma unroll
            for (int i = 0; i < 4; ++i) red[(group - 1) * latent + 4 * quad + i] = acc[i];
        }
        __syncthreads();
        if (group == 0) {
            for (int g = 1; g < L.groups; ++g) {
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[i] += red[(g - 1) * latent + 4 * quad + i];
            }
        }
    }
    if (group != 0) return;
    const float vs = T == KvType::Fp8 ? kv.scale : 1.0f;
    if (chunk >= n_all) {  // split 0 holds every key: the output, and no combine
        const float f = vs / l;
        float* o = a.out + (row * a.heads + h) * a.dv + 4 * quad;
#pragma unroll
        for (int i = 0; i < 4; ++i) o[i] = acc[i] * f;
        return;
    }
    float* part =
        a.part + (((row - a.row_begin) * a.heads + h) * a.splits + blockIdx.z) * a.part_stride;
#pragma unroll
    for (int i = 0; i < 4; ++i) part[4 * quad + i] = acc[i] * vs;
    if (tid == 0) {
        part[a.dv] = m;
        part[a.dv + 1] = l;
    }
}

// q_lat[t, h, lat] = sum_d q[t, h, d] W_k[h, d, lat] (d < dn). A block computes 64 latent
// columns of one head for a tile of up to T tokens, its four warp pairs each summing a quarter of
// d: enough blocks and independent loads in flight for one decode token, where a block per
// (token, head) left most multiprocessors idle and each thread walking all of d. A weight element
// serves the tile's T tokens: with one block per token, 64 decode tokens read each head's W_k
// 64 times from L2 (ncu, H200: 35 us a layer). With one token (batch 1) and dn <= kAbsorbSlices *
// kAbsorbHeld (128, as in every DeepSeek-V3-style checkpoint) a thread loads its weights before
// waiting for the previous kernel, so only the queries' loads follow it. (For tiles of 8 tokens
// the same, fully unrolled, took 85 us a layer at batch 64 against the loop's 24: CUPTI, H200.)
constexpr int kAbsorbCols = 64, kAbsorbSlices = 4, kAbsorbTile = 8, kAbsorbHeld = 32;
template <int T>
__global__ void __launch_bounds__(kAbsorbCols* kAbsorbSlices)
    absorb_q_kernel(const float* q, int64_t tokens, int64_t heads, int64_t dq, const uint16_t* kv_b,
                    int64_t dn, int64_t dv, int64_t latent, float* q_lat) {
    __shared__ float part[kAbsorbSlices][T][kAbsorbCols];
    const int64_t t0 = int64_t(blockIdx.x) * T, h = blockIdx.y;
    const int rows = static_cast<int>(tokens - t0 < T ? tokens - t0 : T);
    const int col = threadIdx.x % kAbsorbCols, slice = threadIdx.x / kAbsorbCols;
    const int64_t lat = int64_t(blockIdx.z) * kAbsorbCols + col;
    const uint16_t* wk = kv_b + h * (dn + dv) * latent;
    const bool held = T == 1 && dn <= int64_t(kAbsorbSlices) * kAbsorbHeld;
    float w[kAbsorbHeld];
#pragma unroll
    for (int k = 0; k < kAbsorbHeld; ++k) {
        const int64_t d = slice + int64_t(k) * kAbsorbSlices;
        w[k] = held && lat < latent && d < dn ? bf16_bits_to_f32(wk[d * latent + lat]) : 0.0f;
    }
    pdl_wait();  // launched early (launch_pdl, pdl.cuh): the queries follow the previous kernel
    pdl_launch_dependents();
    float acc[T];
#pragma unroll
    for (int m = 0; m < T; ++m) acc[m] = 0.0f;
    if (lat < latent && held) {  // d in the loop's order below
#pragma unroll
        for (int k = 0; k < kAbsorbHeld; ++k) {
            const int64_t d = slice + int64_t(k) * kAbsorbSlices;
            if (d < dn) {
#pragma unroll
                for (int m = 0; m < T; ++m)
                    if (m < rows) acc[m] += q[((t0 + m) * heads + h) * dq + d] * w[k];
            }
        }
    } else if (lat < latent) {
#pragma unroll 4
        for (int64_t d = slice; d < dn; d += kAbsorbSlices) {
            const float w = bf16_bits_to_f32(wk[d * latent + lat]);
#pragma unroll
            for (int m = 0; m < T; ++m)
                if (m < rows) acc[m] += q[((t0 + m) * heads + h) * dq + d] * w;
        }
    }
#pragma unroll
    for (int m = 0; m < T; ++m) part[slice][m][col] = acc[m];
    __syncthreads();
    if (slice == 0 && lat < latent) {
#pragma unroll
        for (int m = 0; m < T; ++m) {
            if (m < rows) {
                float sum = 0.0f;
#pragma unroll
                for (int i = 0; i < kAbsorbSlices; ++i) sum += part[i][m][col];
                q_lat[((t0 + m) * heads + h) * latent + lat] = sum;
            }
        }
    }
}

// out[t, h, v] = sum_lat o_lat[t, h, lat] W_v[h, v, lat]: a warp per output value, eight
// latent elements per lane per load, for a tile of up to T tokens (a weight load serves them
// all, as in absorb_q_kernel). Latents of up to kWarp * 8 * kAbsorbVHeld elements (1024) have
// their weights loaded before waiting for the previous kernel.
constexpr int kAbsorbVWarps = 8, kAbsorbVHeld = 4;
template <int T>
__global__ void __launch_bounds__(kWarp* kAbsorbVWarps)
    absorb_v_kernel(const float* o_lat, int64_t tokens, int64_t heads, const uint16_t* kv_b,
                    int64_t dn, int64_t dv, int64_t latent, float* out) {
    const int64_t t0 = int64_t(blockIdx.x) * T, h = blockIdx.y;
    const int rows = static_cast<int>(tokens - t0 < T ? tokens - t0 : T);
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int64_t v = int64_t(blockIdx.z) * kAbsorbVWarps + warp;
    const uint16_t* wv = kv_b + (h * (dn + dv) + dn + v) * latent;
    const bool vec = latent % 8 == 0, held = vec && latent <= int64_t(kWarp) * 8 * kAbsorbVHeld;
    uint4 wq[kAbsorbVHeld];
#pragma unroll
    for (int k = 0; k < kAbsorbVHeld; ++k) {
        const int64_t i = int64_t(lane) * 8 + int64_t(k) * kWarp * 8;
        wq[k] = held && v < dv && i < latent ? *reinterpret_cast<const uint4*>(wv + i)
                                             : make_uint4(0, 0, 0, 0);
    }
    pdl_wait();  // launched early (launch_pdl, pdl.cuh): o_lat follows the previous kernel
    pdl_launch_dependents();
    if (v >= dv) return;
    float acc[T];
#pragma unroll
    for (int m = 0; m < T; ++m) acc[m] = 0.0f;
    // acc[m] += the eight weights in q · o_lat row m at latent element i.
    auto dot8 = [&](const uint4 q, int64_t i) {
        const float w[8] = {__uint_as_float(q.x << 16), __uint_as_float(q.x & 0xffff0000u),
                            __uint_as_float(q.y << 16), __uint_as_float(q.y & 0xffff0000u),
                            __uint_as_float(q.z << 16), __uint_as_float(q.z & 0xffff0000u),
                            __uint_as_float(q.w << 16), __uint_as_float(q.w & 0xffff0000u)};
#pragma unroll
        for (int m = 0; m < T; ++m) {
            if (m < rows) {
                const float* o = o_lat + ((t0 + m) * heads + h) * latent + i;
                const float4 a = *reinterpret_cast<const float4*>(o);
                const float4 b = *reinterpret_cast<const float4*>(o + 4);
                acc[m] += a.x * w[0] + a.y * w[1] + a.z * w[2] + a.w * w[3] + b.x * w[4] +
                          b.y * w[5] + b.z * w[6] + b.w * w[7];
            }
        }
    };
    if (held) {
#pragma unroll
        for (int k = 0; k < kAbsorbVHeld; ++k) {
            const int64_t i = int64_t(lane) * 8 + int64_t(k) * kWarp * 8;
            if (i < latent) dot8(wq[k], i);
        }
    } else if (vec) {
        for (int64_t i = int64_t(lane) * 8; i < latent; i += kWarp * 8)
            dot8(*reinterpret_cast<const uint4*>(wv + i), i);
    } else {
        for (int64_t i = lane; i < latent; i += kWarp) {
            const float w = bf16_bits_to_f32(wv[i]);
#pragma unroll
            for (int m = 0; m < T; ++m)
                if (m < rows) acc[m] += o_lat[((t0 + m) * heads + h) * latent + i] * w;
        }
    }
#pragma unroll
    for (int m = 0; m < T; ++m) {
        if (m < rows) {
            const float sum = warp_sum(acc[m]);
            if (lane == 0) out[((t0 + m) * heads + h) * dv + v] = sum;
        }
    }
}

}  // namespace

void rope(float* q, int64_t tokens, int64_t heads, int64_t width, int64_t offset, const RopeView& r,
          const StepView& st, cudaStream_t s) {
    const int64_t n = tokens * heads * (r.dim / 2);
    if (n == 0) return;
    const int64_t g = (n + 255) / 256;
    launch_pdl(rope_kernel, static_cast<unsigned>(g > 65535 ? 65535 : g), 256, 0, s, q, tokens,
               heads, width, offset, r, st.positions);
}

void cache_append(const float* ckv, int64_t tokens, const void* norm, bool norm_bf16, float eps,
                  const RopeView& r, const KvView& kv, const StepView& st, const QRope& q,
                  cudaStream_t s) {
    // (CudaOps::cache_append holds the widths to what the kernel takes.)
    if (tokens > 0)
        launch_pdl(cache_append_kernel, static_cast<unsigned>(tokens), kAppendThreads, 0, s, ckv,
                   norm, norm_bf16, eps, r, kv, st, q);
}

void gather_context(const KvView& kv, const StepView& st, int64_t seq_begin, int64_t seq_end,
                    int64_t pos_begin, int64_t pos_end, float* latent, float* k_rot,
                    cudaStream_t s) {
    if (seq_end <= seq_begin || pos_end <= pos_begin) return;
    dim3 grid(static_cast<unsigned>(pos_end - pos_begin),
              static_cast<unsigned>(seq_end - seq_begin));
    gather_context_kernel<<<grid, 128, 0, s>>>(kv, st, seq_begin, pos_begin, latent, k_rot);
}

void attention_naive(const AttnArgs& a, const StepView& st, cudaStream_t s) {
    if (a.row_end <= a.row_begin) return;
    dim3 grid(static_cast<unsigned>(a.row_end - a.row_begin), static_cast<unsigned>(a.heads));
    attention_kernel<<<grid, kAttnThreads, a.dq * sizeof(float), s>>>(a, st);
}

namespace {

// Whether the third version runs: where it takes the shape, when the choices say so (by default
// from two blocks of 16 heads: KernelChoices::decode_mma_blocks).
bool use_mma(const AttnArgs& a, const KernelChoices& kc) {
    return kc.decode_v3(a.row_end - a.row_begin, a.heads, a.context) && decode_mma_takes(a);
}

// The second version's threads a block and layout: the choices' threads for the (row, head)
// pairs, or the other count where that layout does not fit (tile 0 when neither does).
DecodeLayout v2_layout(const AttnArgs& a, const KernelChoices& kc, int* threads) {
    if (a.dv != a.cache.latent) return DecodeLayout{};
    *threads = kc.decode_v2_threads((a.row_end - a.row_begin) * a.heads);
    DecodeLayout L = decode_layout(a.cache, *threads);
    if (L.tile == 0 && kc.decode_threads == 0) {
        *threads = *threads == 256 ? 128 : 256;
        L = decode_layout(a.cache, *threads);
    }
    return L;
}

}  // namespace

bool decode_attention_takes(const AttnArgs& a, const KernelChoices& kc) {
    int threads = 0;
    return use_mma(a, kc) || v2_layout(a, kc, &threads).tile > 0;
}

int64_t attention_splits(const AttnArgs& a, const KernelChoices& kc) {
    const int64_t rows = a.row_end - a.row_begin;
    if (use_mma(a, kc)) return decode_mma_splits(rows, a.heads, kc);
    // About decode_split_blocks blocks (four a multiprocessor); version 2 may take many splits,
    // since it leaves those past a short context empty.
    const int64_t pairs = rows * a.heads;
    const int64_t most = std::min<int64_t>(kc.decode_max_splits, 32);
    const int64_t want = kc.decode_split_blocks / (pairs > 1 ? pairs : 1);
    return want < 1 ? 1 : (want > most ? most : want);
}

void attention_absorbed(const AttnArgs& a, const StepView& st, const KernelChoices& kc,
                        cudaStream_t s) {
    if (a.row_end <= a.row_begin) return;
    if (use_mma(a, kc)) {
        attention_absorbed_mma(a, st, s);
        if (a.splits > 1)  // decode_mma_takes: dv a multiple of 64
            launch_pdl(join_splits_wide_kernel,
                       dim3(static_cast<unsigned>(a.row_end - a.row_begin),
                            static_cast<unsigned>(a.heads)),
                       kWideJoinThreads, 0, s, a, st);
        return;
    }
    dim3 grid(static_cast<unsigned>(a.row_end - a.row_begin), static_cast<unsigned>(a.heads),
              static_cast<unsigned>(a.splits > 1 ? a.splits : 1));
    // Eight warps a block while the (row, head) pairs are fewer than the multiprocessors.
    int threads = 0;
    const DecodeLayout L = v2_layout(a, kc, &threads);
    if (L.tile == 0) return;  // decode_attention_takes: CudaOps checks first
    const size_t smem = static_cast<size_t>(L.bytes);
    auto go = [&](auto kernel) { launch_pdl(kernel, grid, threads, smem, s, a, st, L); };
    const bool wide = threads == 256;
    switch (a.cache.type) {
        case KvType::F32:
            wide ? go(decode_attention_kernel<KvType::F32, 256>)
                 : go(decode_attention_kernel<KvType::F32, 128>);
            break;
        case KvType::Bf16:
            wide ? go(decode_attention_kernel<KvType::Bf16, 256>)
                 : go(decode_attention_kernel<KvType::Bf16, 128>);
            break;
        case KvType::Fp8:
            wide ? go(decode_attention_kernel<KvType::Fp8, 256>)
                 : go(decode_attention_kernel<KvType::Fp8, 128>);
            break;
    }
    if (a.splits > 1)  // attention_splits: at most 32 (kMaxSplits)
        launch_pdl(
            join_splits_kernel,
            dim3(grid.x, grid.y, static_cast<unsigned>((a.dv + kJoinThreads - 1) / kJoinThreads)),
            kJoinThreads, 0, s, a, st);
}

void absorb_q(const float* q, int64_t tokens, int64_t heads, int64_t dq, const uint16_t* kv_b,
              int64_t dn, int64_t dv, int64_t latent, float* q_lat, cudaStream_t s) {
    if (tokens == 0) return;
    // One token (batch-1 decode) keeps a tile of one: no idle accumulators.
    const int64_t tile = tokens == 1 ? 1 : kAbsorbTile;
    dim3 grid(static_cast<unsigned>((tokens + tile - 1) / tile), static_cast<unsigned>(heads),
              static_cast<unsigned>((latent + kAbsorbCols - 1) / kAbsorbCols));
    if (tile == 1)
        launch_pdl(absorb_q_kernel<1>, grid, kAbsorbCols * kAbsorbSlices, 0, s, q, tokens, heads,
                   dq, kv_b, dn, dv, latent, q_lat);
    else
        launch_pdl(absorb_q_kernel<kAbsorbTile>, grid, kAbsorbCols * kAbsorbSlices, 0, s, q, tokens,
                   heads, dq, kv_b, dn, dv, latent, q_lat);
}

void absorb_v(const float* o_lat, int64_t tokens, int64_t heads, const uint16_t* kv_b, int64_t dn,
              int64_t dv, int64_t latent, float* out, cudaStream_t s) {
    if (tokens == 0) return;
    const int64_t tile = tokens == 1 ? 1 : kAbsorbTile;
    dim3 grid(static_cast<unsigned>((tokens + tile - 1) / tile), static_cast<unsigned>(heads),
              static_cast<unsigned>((dv + kAbsorbVWarps - 1) / kAbsorbVWarps));
    if (tile == 1)
        launch_pdl(absorb_v_kernel<1>, grid, kWarp * kAbsorbVWarps, 0, s, o_lat, tokens, heads,
                   kv_b, dn, dv, latent, out);
    else
        launch_pdl(absorb_v_kernel<kAbsorbTile>, grid, kWarp * kAbsorbVWarps, 0, s, o_lat, tokens,
                   heads, kv_b, dn, dv, latent, out);
}

}  // namespace myriad::cuda
