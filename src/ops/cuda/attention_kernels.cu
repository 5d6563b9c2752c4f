// MLA on the GPU: rotary embedding, the paged latent cache (append, gather), attention in the
// naive (prefill) and absorbed (decode) forms, and the absorption products with kv_b_proj.
// reference.md §1.3 and §1.6.
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"

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

// One block per new token: latent = rmsnorm(ckv[:latent]), k_rot = rope(ckv[latent:]).
__global__ void cache_append_kernel(const float* ckv, const void* norm, bool norm_bf16, float eps,
                                    RopeView r, KvView kv, StepView st) {
    const int64_t t = blockIdx.x, width = entry_width(kv);
    const float* src = ckv + t * width;
    const int64_t slot = st.slots[t];
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < kv.latent; i += blockDim.x) ss += src[i] * src[i];
    ss = block_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(kv.latent) + eps);
    for (int64_t i = threadIdx.x; i < kv.latent; i += blockDim.x) {
        const float w = norm_bf16 ? bf16_bits_to_f32(static_cast<const uint16_t*>(norm)[i])
                                  : static_cast<const float*>(norm)[i];
        store_kv(kv, slot, i, w * (src[i] * inv));
    }
    const int64_t half = kv.rope / 2;
    for (int64_t p = threadIdx.x; p < half; p += blockDim.x) {
        const int64_t ia = r.half_split ? p : 2 * p, ib = r.half_split ? p + half : 2 * p + 1;
        float a = src[kv.latent + ia], b = src[kv.latent + ib];
        rotate_pair(&a, &b, r.inv_freq[p] * static_cast<float>(st.positions[t]),
                    r.attention_factor);
        store_kv(kv, slot, kv.latent + ia, a);
        store_kv(kv, slot, kv.latent + ib, b);
    }
}

// Block (position, sequence): the cached entry as F32 rows of latent and k_rot.
__global__ void gather_context_kernel(KvView kv, StepView st, int64_t seq_begin, float* latent,
                                      float* k_rot) {
    const int64_t s = seq_begin + blockIdx.y, p = blockIdx.x;
    if (p >= st.ctx_len[s]) return;
    const int64_t row = st.ctx_prefix[s] - st.ctx_prefix[seq_begin] + p;
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

// Attention of one (query row, head) with an online softmax over tiles of keys. Keys have
// `dk` elements (key(j, i)), values `dv` (value(j, d)); the query is staged in shared memory.
template <bool Absorbed>
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnArgs a, StepView st) {
    extern __shared__ float smem[];
    __shared__ float scores[kTile];
    __shared__ int64_t slots[kTile];  // absorbed: each key's cache slot, looked up once
    const int64_t row = a.row_begin + blockIdx.x, h = blockIdx.y;
    const int64_t s = st.row_seq[row];
    const int64_t n_all = int64_t(st.positions[row]) + 1;  // causal: positions 0..pos
    // Split z of `splits` (absorbed decode): keys [k0, n), chunks a multiple of 8 keys. (Whole
    // tiles of 64 left a short context to one split, which then walked its keys alone.)
    int64_t k0 = 0, n = n_all;
    if (Absorbed && a.splits > 1) {
        const int64_t chunk = ((n_all + a.splits - 1) / a.splits + 7) / 8 * 8;
        k0 = int64_t(blockIdx.z) * chunk;
        n = k0 + chunk < n_all ? k0 + chunk : n_all;
    }
    const int64_t dk = Absorbed ? a.cache.latent + a.cache.rope : a.dq;
    float* qs = smem;
    for (int64_t i = threadIdx.x; i < dk; i += blockDim.x) {
        if constexpr (Absorbed)
            qs[i] = i < a.cache.latent
                        ? a.q[(row * a.heads + h) * a.cache.latent + i]
                        : a.q_rope[(row * a.heads + h) * a.dq + a.nope + i - a.cache.latent];
        else
            qs[i] = a.q[(row * a.heads + h) * a.dq + i];
    }
    __syncthreads();
    const int64_t ctx_base = Absorbed ? 0 : st.ctx_prefix[s] - st.ctx_prefix[a.seq_begin];
    const int64_t kv_width = a.nope + a.dv;  // naive kv rows
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;

    float m = -INFINITY, l = 0.0f, acc[kMaxVPerThread];
#pragma unroll
    for (int i = 0; i < kMaxVPerThread; ++i) acc[i] = 0.0f;

    for (int64_t t0 = k0; t0 < n; t0 += kTile) {
        const int64_t cnt = n - t0 < kTile ? n - t0 : kTile;
        for (int64_t jj = warp; jj < cnt; jj += kAttnWarps) {
            const int64_t j = t0 + jj;
            float dot = 0.0f;
            if constexpr (Absorbed) {
                const int64_t slot = context_slot(a.cache, st, s, j);
                if (lane == 0) slots[jj] = slot;
                for (int64_t i = lane; i < dk; i += kWarp) dot += qs[i] * load_kv(a.cache, slot, i);
            } else {
                const int64_t c = ctx_base + j;
                const float* kn = a.kv + (c * a.heads + h) * kv_width;
                for (int64_t i = lane; i < a.nope; i += kWarp) dot += qs[i] * kn[i];
                for (int64_t i = lane; i < a.dr; i += kWarp)
                    dot += qs[a.nope + i] * a.k_rot[c * a.dr + i];
            }
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
                if (d < a.dv) {
                    float v;
                    if constexpr (Absorbed)
                        v = load_kv(a.cache, slots[jj], d);
                    else
                        v = a.kv[((ctx_base + j) * a.heads + h) * kv_width + a.nope + d];
                    acc[i] += p * v;
                }
            }
        }
        m = m_new;
        __syncthreads();  // `scores` is rewritten by the next tile
    }
    if (Absorbed && a.splits > 1) {  // unnormalised, with the running max and sum
        float* p =
            a.part + (((row - a.row_begin) * a.heads + h) * a.splits + blockIdx.z) * (a.dv + 2);
#pragma unroll
        for (int i = 0; i < kMaxVPerThread; ++i) {
            const int64_t d = threadIdx.x + int64_t(i) * kAttnThreads;
            if (d < a.dv) p[d] = acc[i];
        }
        if (threadIdx.x == 0) {
            p[a.dv] = m;
            p[a.dv + 1] = l;
        }
        return;
    }
    const float inv = 1.0f / l;
#pragma unroll
    for (int i = 0; i < kMaxVPerThread; ++i) {
        const int64_t d = threadIdx.x + int64_t(i) * kAttnThreads;
        if (d < a.dv) a.out[(row * a.heads + h) * a.dv + d] = acc[i] * inv;
    }
}

// Joins the splits of attention_kernel<true>: out = sum_z acc_z e^(m_z - M) / sum_z l_z e^(m_z -
// M). Each split's weight e^(m_z - M) / den is computed once, into shared memory, by the first
// warp (at most kMaxSplits splits), and the threads then sum the splits' partials for their
// value elements with those weights.
constexpr int kMaxSplits = 64;
__global__ void combine_splits_kernel(AttnArgs a) {
    __shared__ float weight[kMaxSplits];
    const int64_t r = blockIdx.x, h = blockIdx.y;
    const int64_t width = a.dv + 2;
    const float* p = a.part + (r * a.heads + h) * a.splits * width;
    if (threadIdx.x < kWarp) {
        const int lane = threadIdx.x;
        float mz[kMaxSplits / kWarp], lz[kMaxSplits / kWarp];
        float mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < kMaxSplits / kWarp; ++i) {
            const int64_t z = lane + int64_t(i) * kWarp;
            mz[i] = z < a.splits ? p[z * width + a.dv] : -INFINITY;
            lz[i] = z < a.splits ? p[z * width + a.dv + 1] : 0.0f;
            mx = fmaxf(mx, mz[i]);
        }
        mx = warp_max(mx);
        float e[kMaxSplits / kWarp], den = 0.0f;
#pragma unroll
        for (int i = 0; i < kMaxSplits / kWarp; ++i) {
            e[i] = mz[i] == -INFINITY ? 0.0f : expf(mz[i] - mx);
            den += lz[i] * e[i];
        }
        den = warp_sum(den);
#pragma unroll
        for (int i = 0; i < kMaxSplits / kWarp; ++i) {
            const int64_t z = lane + int64_t(i) * kWarp;
            if (z < a.splits) weight[z] = e[i] / den;
        }
    }
    __syncthreads();
    for (int64_t d = threadIdx.x; d < a.dv; d += blockDim.x) {
        float num = 0.0f;
        for (int64_t z = 0; z < a.splits; ++z)
            if (weight[z] != 0.0f) num += p[z * width + d] * weight[z];
        a.out[((a.row_begin + r) * a.heads + h) * a.dv + d] = num;
    }
}

// q_lat[t, h, lat] = sum_d q[t, h, d] W_k[h, d, lat] (d < dn). A block computes 64 latent
// columns of one (token, head), its four warp pairs each summing a quarter of d: enough blocks
// and independent loads in flight for one decode token, where a block per (token, head) left
// most multiprocessors idle and each thread walking all of d.
constexpr int kAbsorbCols = 64, kAbsorbSlices = 4;
__global__ void __launch_bounds__(kAbsorbCols* kAbsorbSlices)
    absorb_q_kernel(const float* q, int64_t heads, int64_t dq, const uint16_t* kv_b, int64_t dn,
                    int64_t dv, int64_t latent, float* q_lat) {
    __shared__ float part[kAbsorbSlices][kAbsorbCols];
    const int64_t t = blockIdx.x, h = blockIdx.y;
    const int col = threadIdx.x % kAbsorbCols, slice = threadIdx.x / kAbsorbCols;
    const int64_t lat = int64_t(blockIdx.z) * kAbsorbCols + col;
    const float* qn = q + (t * heads + h) * dq;
    const uint16_t* wk = kv_b + h * (dn + dv) * latent;
    float acc = 0.0f;
    if (lat < latent) {
#pragma unroll 8
        for (int64_t d = slice; d < dn; d += kAbsorbSlices)
            acc += qn[d] * bf16_bits_to_f32(wk[d * latent + lat]);
    }
    part[slice][col] = acc;
    __syncthreads();
    if (slice == 0 && lat < latent) {
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < kAbsorbSlices; ++i) sum += part[i][col];
        q_lat[(t * heads + h) * latent + lat] = sum;
    }
}

// out[t, h, v] = sum_lat o_lat[t, h, lat] W_v[h, v, lat]: a warp per output value, eight
// latent elements per lane per load.
constexpr int kAbsorbVWarps = 8;
__global__ void __launch_bounds__(kWarp* kAbsorbVWarps)
    absorb_v_kernel(const float* o_lat, int64_t heads, const uint16_t* kv_b, int64_t dn, int64_t dv,
                    int64_t latent, float* out) {
    const int64_t t = blockIdx.x, h = blockIdx.y;
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int64_t v = int64_t(blockIdx.z) * kAbsorbVWarps + warp;
    if (v >= dv) return;
    const float* o = o_lat + (t * heads + h) * latent;
    const uint16_t* wv = kv_b + (h * (dn + dv) + dn + v) * latent;
    float acc = 0.0f;
    if (latent % 8 == 0) {
        for (int64_t i = int64_t(lane) * 8; i < latent; i += kWarp * 8) {
            const uint4 q = *reinterpret_cast<const uint4*>(wv + i);
            const float4 a = *reinterpret_cast<const float4*>(o + i);
            const float4 b = *reinterpret_cast<const float4*>(o + i + 4);
            acc += a.x * __uint_as_float(q.x << 16) + a.y * __uint_as_float(q.x & 0xffff0000u) +
                   a.z * __uint_as_float(q.y << 16) + a.w * __uint_as_float(q.y & 0xffff0000u) +
                   b.x * __uint_as_float(q.z << 16) + b.y * __uint_as_float(q.z & 0xffff0000u) +
                   b.z * __uint_as_float(q.w << 16) + b.w * __uint_as_float(q.w & 0xffff0000u);
        }
    } else {
        for (int64_t i = lane; i < latent; i += kWarp) acc += o[i] * bf16_bits_to_f32(wv[i]);
    }
    acc = warp_sum(acc);
    if (lane == 0) out[(t * heads + h) * dv + v] = acc;
}

}  // namespace

void rope(float* q, int64_t tokens, int64_t heads, int64_t width, int64_t offset, const RopeView& r,
          const StepView& st, cudaStream_t s) {
    const int64_t n = tokens * heads * (r.dim / 2);
    if (n == 0) return;
    const int64_t g = (n + 255) / 256;
    rope_kernel<<<static_cast<unsigned>(g > 65535 ? 65535 : g), 256, 0, s>>>(
        q, tokens, heads, width, offset, r, st.positions);
}

void cache_append(const float* ckv, int64_t tokens, const void* norm, bool norm_bf16, float eps,
                  const RopeView& r, const KvView& kv, const StepView& st, cudaStream_t s) {
    if (tokens > 0)
        cache_append_kernel<<<static_cast<unsigned>(tokens), 128, 0, s>>>(ckv, norm, norm_bf16, eps,
                                                                          r, kv, st);
}

void gather_context(const KvView& kv, const StepView& st, int64_t seq_begin, int64_t seq_end,
                    int64_t max_ctx, float* latent, float* k_rot, cudaStream_t s) {
    if (seq_end <= seq_begin || max_ctx == 0) return;
    dim3 grid(static_cast<unsigned>(max_ctx), static_cast<unsigned>(seq_end - seq_begin));
    gather_context_kernel<<<grid, 128, 0, s>>>(kv, st, seq_begin, latent, k_rot);
}

void attention_naive(const AttnArgs& a, const StepView& st, cudaStream_t s) {
    if (a.row_end <= a.row_begin) return;
    dim3 grid(static_cast<unsigned>(a.row_end - a.row_begin), static_cast<unsigned>(a.heads));
    attention_kernel<false><<<grid, kAttnThreads, a.dq * sizeof(float), s>>>(a, st);
}

void attention_absorbed(const AttnArgs& a, const StepView& st, cudaStream_t s) {
    if (a.row_end <= a.row_begin) return;
    dim3 grid(static_cast<unsigned>(a.row_end - a.row_begin), static_cast<unsigned>(a.heads),
              static_cast<unsigned>(a.splits > 1 ? a.splits : 1));
    const size_t smem = (a.cache.latent + a.cache.rope) * sizeof(float);
    attention_kernel<true><<<grid, kAttnThreads, smem, s>>>(a, st);
    if (a.splits > 1) combine_splits_kernel<<<dim3(grid.x, grid.y), kAttnThreads, 0, s>>>(a);
}

void absorb_q(const float* q, int64_t tokens, int64_t heads, int64_t dq, const uint16_t* kv_b,
              int64_t dn, int64_t dv, int64_t latent, float* q_lat, cudaStream_t s) {
    if (tokens == 0) return;
    dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(heads),
              static_cast<unsigned>((latent + kAbsorbCols - 1) / kAbsorbCols));
    absorb_q_kernel<<<grid, kAbsorbCols * kAbsorbSlices, 0, s>>>(q, heads, dq, kv_b, dn, dv, latent,
                                                                 q_lat);
}

void absorb_v(const float* o_lat, int64_t tokens, int64_t heads, const uint16_t* kv_b, int64_t dn,
              int64_t dv, int64_t latent, float* out, cudaStream_t s) {
    if (tokens == 0) return;
    dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(heads),
              static_cast<unsigned>((dv + kAbsorbVWarps - 1) / kAbsorbVWarps));
    absorb_v_kernel<<<grid, kWarp * kAbsorbVWarps, 0, s>>>(o_lat, heads, kv_b, dn, dv, latent, out);
}

}  // namespace myriad::cuda
