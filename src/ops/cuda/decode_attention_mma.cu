// Absorbed MLA decode attention on the tensor cores, heads grouped (the third version; the
// default for a BF16 cache where a step makes two blocks or more). Every head of a query row
// attends over the same latent cache entries, so a block takes 16 heads of one row (the M of
// mma.sync m16n8k16) and one split of its keys: each key's entry crosses from memory into shared
// memory once for the 16 heads, where the second version copied it once per head (batch 64,
// Moonlight: 16 reads of each entry, 234 us a layer, 36 % of a step). Scores S = Q K^T and the
// values O += P V are mma products, BF16 in and F32 accumulate (queries and weights as hi + lo
// BF16 parts); the online softmax runs between them in F32.
//
// A block: 4 warps, two stages of 32 keys copied with cp.async (the old keys' copies before the
// PDL wait, as the second version). Warp w holds the queries' fragments for a quarter of the
// entry's width in registers; per tile it computes all 32 keys' partial scores over that
// quarter, the softmax (thread: head t / 8, 4 keys) sums the four parts and writes the weights,
// and warp w then accumulates latent columns [w latent / 4, (w + 1) latent / 4) of the 16 heads'
// values. Partials go to join_splits_wide_kernel (attention_kernels.cu).
#include <algorithm>
#include <atomic>

#include "ops/cuda/decode_splits.cuh"
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/mma.cuh"
#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

namespace {

constexpr int kHeadsPerBlock = 16;  // the mma's M
constexpr int kTileKeys = 32;       // keys a stage
constexpr int kMmaWarps = 4;
constexpr int kMmaThreads = kMmaWarps * kWarp;
constexpr int kMaxColTiles = 16;  // 8-column tiles of the values a warp: latent <= 512
constexpr int kMaxKSteps = 9;     // 16-wide steps of an entry a warp: latent + rope <= 576
constexpr int kPad = 8;           // BF16 elements after each key row: conflict-free ldmatrix
constexpr int kProbStride = kTileKeys + kPad;
constexpr int kScoreStride = kTileKeys + 4;

// Shared memory: two stages of kTileKeys entries (BF16, rows of dk + kPad elements: 16-byte
// aligned, 8 consecutive rows on distinct banks), each warp's partial scores (F32), the
// weights as two BF16 parts (hi, lo), and each head's running max, sum and this tile's
// correction.
struct MmaLayout {
    int32_t dk = 0, row = 0;
    int32_t score_off = 0, prob_off = 0, stat_off = 0, bytes = 0;
};

MmaLayout mma_layout(const KvView& kv) {
    MmaLayout L;
    L.dk = static_cast<int32_t>(kv.latent + kv.rope);
    L.row = L.dk + kPad;
    L.score_off = 2 * kTileKeys * L.row * 2;
    L.prob_off = L.score_off + kMmaWarps * kHeadsPerBlock * kScoreStride * 4;
    L.stat_off = L.prob_off + 2 * kHeadsPerBlock * kProbStride * 2;
    L.bytes = L.stat_off + 3 * kHeadsPerBlock * 4;
    return L;
}

// x as hi + lo, both BF16 (hi the nearest BF16, lo the nearest to the rest): 16 bits of
// mantissa, so the products keep about F32's accuracy where BF16 alone lost 2e-3 of the
// output (the queries' rounding, simulated over Moonlight-shaped random data).
__device__ __forceinline__ void split_bf16(float x, float y, uint32_t& hi, uint32_t& lo) {
    hi = bf16x2(x, y);
    lo = bf16x2(x - bf16_bits_to_f32(static_cast<uint16_t>(hi & 0xffffu)),
                y - bf16_bits_to_f32(static_cast<uint16_t>(hi >> 16)));
}

// Block (row, 16 heads from blockIdx.y * 16, split blockIdx.z). Warp w holds the queries'
// A fragments (hi and lo) of its quarter of the entry's 16-wide steps in registers, read from
// global memory once; per tile it computes all 32 keys' partial scores over that quarter, and
// the softmax sums the four warps' parts. Then warp w accumulates latent columns [w latent / 4,
// (w + 1) latent / 4) of the 16 heads' values from the weights (hi and lo) and the tile.
__global__ void __launch_bounds__(kMmaThreads)
    decode_mma_kernel(AttnArgs a, StepView st, MmaLayout L) {
    extern __shared__ __align__(16) unsigned char mma_smem[];
    uint16_t* keys = reinterpret_cast<uint16_t*>(mma_smem);
    float* scores = reinterpret_cast<float*>(mma_smem + L.score_off);      // [warp][head][key]
    uint16_t* probs = reinterpret_cast<uint16_t*>(mma_smem + L.prob_off);  // hi, then lo
    float* row_m = reinterpret_cast<float*>(mma_smem + L.stat_off);  // running max (log2 units)
    float* row_l = row_m + kHeadsPerBlock;                           // running sum
    float* row_c = row_l + kHeadsPerBlock;                           // this tile's correction
    const KvView& kv = a.cache;
    const int64_t row = a.row_begin + blockIdx.x;
    const int64_t h0 = int64_t(blockIdx.y) * kHeadsPerBlock;
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int g = lane / 4, t4 = lane % 4;

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
    const int dk = L.dk, stride = L.row, latent = static_cast<int>(kv.latent);
    const int chunks16 = dk / 8;  // 16-byte pieces of an entry
    const int32_t bs = static_cast<int32_t>(kv.block_size);

    // Warp w copies keys w, w + 4, ... of a tile; its lane i looks up key w + 4i's slot.
    auto lookup = [&](int64_t t0) {
        const int64_t j = warp + int64_t(kMmaWarps) * lane;
        if (j >= kTileKeys || t0 + j >= k1) return int64_t(0);
        const int32_t p = static_cast<int32_t>(t0 + j);
        return int64_t(table[p / bs]) * bs + p % bs;
    };
    // The tile's keys at positions [lo, hi); with `zero`, rows past the split's end are zeroed
    // (their weights are 0, and 0 times stale bits must not make a NaN).
    auto copy = [&](int64_t t0, int stage, int64_t slot, int64_t lo, int64_t hi, bool zero) {
        uint16_t* dst = keys + stage * kTileKeys * stride;
        int k = 0;
        for (int j = warp; j < kTileKeys; j += kMmaWarps, ++k) {
            const int64_t sk = __shfl_sync(0xffffffffu, slot, k);
            const int64_t p = t0 + j;
            if (p >= k1) {
                if (zero)
                    for (int v = lane; v < chunks16; v += kWarp)
                        *reinterpret_cast<uint4*>(dst + j * stride + 8 * v) =
                            make_uint4(0, 0, 0, 0);
                continue;
            }
            if (p < lo || p >= hi) continue;
            const uint16_t* src = static_cast<const uint16_t*>(kv.data) + sk * dk;
            for (int v = lane; v < chunks16; v += kWarp)
                cp_async16(dst + j * stride + 8 * v, src + 8 * v);
        }
    };

    const int64_t tiles = (k1 - k0 + kTileKeys - 1) / kTileKeys;
    const int64_t slot0 = lookup(k0), slot1 = tiles > 1 ? lookup(k0 + kTileKeys) : 0;
    copy(k0, 0, slot0, 0, first_new, true);
    if (tiles > 1) copy(k0 + kTileKeys, 1, slot1, 0, first_new, true);
    if (tid < kHeadsPerBlock) {
        row_m[tid] = -INFINITY;
        row_l[tid] = 0.0f;
    }
    pdl_wait();  // launched early (launch_pdl, pdl.cuh): the queries and new keys follow it
    pdl_launch_dependents();
    copy(k0, 0, slot0, first_new, k1, false);
    cp_async_commit();
    if (tiles > 1) copy(k0 + kTileKeys, 1, slot1, first_new, k1, false);
    cp_async_commit();

    // This warp's 16-wide steps of the entry and their A fragments (rows g and g + 8: heads;
    // columns 2 t4 (+1) and + 8 of the step), from q_lat (the latent) and q (the rope part).
    const int ksteps = dk / 16, per_warp = (ksteps + kMmaWarps - 1) / kMmaWarps;
    const int kbase = warp * per_warp;
    const int mine =
        ksteps - kbase < per_warp ? (ksteps - kbase > 0 ? ksteps - kbase : 0) : per_warp;
    uint32_t qh[kMaxKSteps][4], ql[kMaxKSteps][4];
    {
        auto pair = [&](int64_t h, int col) {
            if (h >= a.heads) return make_float2(0.0f, 0.0f);
            return col < latent
                       ? *reinterpret_cast<const float2*>(a.q + (row * a.heads + h) * latent + col)
                       : *reinterpret_cast<const float2*>(a.q_rope + (row * a.heads + h) * a.dq +
                                                          a.nope + (col - latent));
        };
#pragma unroll
        for (int i = 0; i < kMaxKSteps; ++i) {
            if (i >= mine) break;
            const int col = 16 * (kbase + i) + 2 * t4;
            const float2 v0 = pair(h0 + g, col), v1 = pair(h0 + g + 8, col),
                         v2 = pair(h0 + g, col + 8), v3 = pair(h0 + g + 8, col + 8);
            split_bf16(v0.x, v0.y, qh[i][0], ql[i][0]);
            split_bf16(v1.x, v1.y, qh[i][1], ql[i][1]);
            split_bf16(v2.x, v2.y, qh[i][2], ql[i][2]);
            split_bf16(v3.x, v3.y, qh[i][3], ql[i][3]);
        }
    }

    // Scores in log2 units: exp2(s - m) is e^(scale q.k - m ln 2).
    const float score_scale = a.scale * 1.4426950408889634f;
    const int col_tiles = latent / (8 * kMmaWarps);  // 8-column tiles of values a warp
    const int col0 = warp * (latent / kMmaWarps);
    float acc[kMaxColTiles][4];
#pragma unroll
    for (int j = 0; j < kMaxColTiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    // ldmatrix rows of this lane: the weights' A fragment (16 heads x 16 keys) and the keys'
    // B fragments (two 8-key tiles of one step: keys + 8 (lane / 16), columns + 8 bit 3).
    const int a_row = (lane % 8) + 8 * ((lane / 8) % 2), a_col = 8 * (lane / 16);
    const int b_key = (lane % 8) + 8 * (lane / 16), b_col = 8 * ((lane / 8) % 2);
    uint16_t* probs_lo = probs + kHeadsPerBlock * kProbStride;

    for (int64_t it = 0; it < tiles; ++it) {
        const int64_t t0 = k0 + it * kTileKeys;
        const uint16_t* buf = keys + (it & 1) * kTileKeys * stride;
        const int64_t slot2 = it + 2 < tiles ? lookup(t0 + 2 * kTileKeys) : 0;
        cp_async_wait<1>();  // this tile's group (all but the latest)
        __syncthreads();     // every thread's copies visible

        // This warp's part of S (16 heads x 32 keys): four 8-key tiles over its steps.
        {
            float c[4][4];
#pragma unroll
            for (int n = 0; n < 4; ++n) c[n][0] = c[n][1] = c[n][2] = c[n][3] = 0.0f;
            const uint16_t* kb = buf + b_key * stride + 16 * kbase + b_col;
#pragma unroll
            for (int i = 0; i < kMaxKSteps; ++i) {
                if (i >= mine) break;
#pragma unroll
                for (int n = 0; n < 4; n += 2) {
                    uint32_t b[4];
                    ldmatrix_x4(b, kb + 8 * n * stride + 16 * i);
                    mma_bf16(c[n], qh[i], b[0], b[1]);
                    mma_bf16(c[n + 1], qh[i], b[2], b[3]);
                    mma_bf16(c[n], ql[i], b[0], b[1]);
                    mma_bf16(c[n + 1], ql[i], b[2], b[3]);
                }
            }
            float* sw = scores + warp * kHeadsPerBlock * kScoreStride + 2 * t4;
#pragma unroll
            for (int n = 0; n < 4; ++n) {
                *reinterpret_cast<float2*>(sw + g * kScoreStride + 8 * n) =
                    make_float2(c[n][0], c[n][1]);
                *reinterpret_cast<float2*>(sw + (g + 8) * kScoreStride + 8 * n) =
                    make_float2(c[n][2], c[n][3]);
            }
        }
        __syncthreads();

        // Online softmax: thread (head tid / 8, keys 4 (tid % 8) ..), the 8 of a head in one
        // warp's consecutive lanes; the weights go out as hi + lo.
        {
            const int hh = tid / 8, q4 = 4 * (tid % 8);
            float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int w = 0; w < kMmaWarps; ++w) {
                const float4 v = *reinterpret_cast<const float4*>(
                    scores + (w * kHeadsPerBlock + hh) * kScoreStride + q4);
                sc[0] += v.x;
                sc[1] += v.y;
                sc[2] += v.z;
                sc[3] += v.w;
            }
            const int valid = static_cast<int>(k1 - t0) - q4;  // keys of these 4 inside the split
            float mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                sc[i] = i < valid ? sc[i] * score_scale : -INFINITY;
                mx = fmaxf(mx, sc[i]);
            }
#pragma unroll
            for (int o = 1; o < 8; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float m_old = row_m[hh];
            const float m_new = fmaxf(m_old, mx);  // finite: every tile has a key
            float p[4], sum = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                p[i] = exp2f(sc[i] - m_new);
                sum += p[i];
            }
            uint32_t h01, l01, h23, l23;
            split_bf16(p[0], p[1], h01, l01);
            split_bf16(p[2], p[3], h23, l23);
            *reinterpret_cast<uint2*>(probs + hh * kProbStride + q4) = make_uint2(h01, h23);
            *reinterpret_cast<uint2*>(probs_lo + hh * kProbStride + q4) = make_uint2(l01, l23);
#pragma unroll
            for (int o = 1; o < 8; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (tid % 8 == 0) {
                const float corr = exp2f(m_old - m_new);  // 0 on the first tile
                row_l[hh] = row_l[hh] * corr + sum;
                row_m[hh] = m_new;
                row_c[hh] = corr;
            }
        }
        __syncthreads();

        // O (16 heads x this warp's columns) = O corr + P V.
        {
            const float lo = row_c[g], hi = row_c[g + 8];
#pragma unroll
            for (int j = 0; j < kMaxColTiles; ++j) {
                acc[j][0] *= lo;
                acc[j][1] *= lo;
                acc[j][2] *= hi;
                acc[j][3] *= hi;
            }
#pragma unroll
            for (int kk = 0; kk < kTileKeys / 16; ++kk) {
                uint32_t ph[4], pl[4];
                ldmatrix_x4(ph, probs + a_row * kProbStride + 16 * kk + a_col);
                ldmatrix_x4(pl, probs_lo + a_row * kProbStride + 16 * kk + a_col);
                // V rows (keys) 16kk + lane % 16, columns col0 + 16 jj + 8 (lane / 16).
                const uint16_t* vb = buf + (16 * kk + lane % 16) * stride + col0 + 8 * (lane / 16);
#pragma unroll
                for (int jj = 0; jj < kMaxColTiles / 2; ++jj) {
                    if (2 * jj >= col_tiles) break;
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, vb + 16 * jj);
                    mma_bf16(acc[2 * jj], ph, b[0], b[1]);
                    mma_bf16(acc[2 * jj + 1], ph, b[2], b[3]);
                    mma_bf16(acc[2 * jj], pl, b[0], b[1]);
                    mma_bf16(acc[2 * jj + 1], pl, b[2], b[3]);
                }
            }
        }
        if (it + 2 < tiles) {
            __syncthreads();  // every warp is done with this stage before it is refilled
            copy(t0 + 2 * kTileKeys, static_cast<int>(it & 1), slot2, 0, k1, true);
        }
        cp_async_commit();
    }

    // Heads g and g + 8 of the block, columns col0 + 8j + 2 t4 (+1).
    const bool whole = chunk >= n_all;  // split 0 holds every key: the output, and no join
    const int64_t width = a.part_stride;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int hh = g + 8 * half;
        const int64_t h = h0 + hh;
        if (h >= a.heads) continue;
        const float f = whole ? 1.0f / row_l[hh] : 1.0f;
        float* o =
            whole ? a.out + (row * a.heads + h) * a.dv
                  : a.part + (((row - a.row_begin) * a.heads + h) * a.splits + blockIdx.z) * width;
#pragma unroll
        for (int j = 0; j < kMaxColTiles; ++j) {
            if (j >= col_tiles) break;
            *reinterpret_cast<float2*>(o + col0 + 8 * j + 2 * t4) =
                make_float2(acc[j][2 * half] * f, acc[j][2 * half + 1] * f);
        }
        if (!whole && t4 == 0 && warp == 0) {
            o[a.dv] = row_m[hh] * 0.6931471805599453f;  // natural-log units for the join
            o[a.dv + 1] = row_l[hh];
        }
    }
}

std::atomic<int64_t> opted_smem[kMaxDevices];  // bytes opted in per device (0: 48 KB)

}  // namespace

bool decode_mma_takes(const AttnArgs& a) {
    const KvView& kv = a.cache;
    const int64_t dk = kv.latent + kv.rope;
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    return kv.type == KvType::Bf16 && a.dv == kv.latent && kv.latent % (16 * kMmaWarps) == 0 &&
           kv.latent <= 8 * kMmaWarps * kMaxColTiles && kv.rope % 8 == 0 && dk % 16 == 0 &&
           dk <= 16 * kMmaWarps * kMaxKSteps && a.dq % 4 == 0 && a.nope % 4 == 0 &&
           aligned(kv.data) && aligned(a.q) && aligned(a.q_rope) && aligned(a.out) &&
           mma_layout(kv).bytes <= 227 * 1024;
}

int64_t decode_mma_splits(int64_t rows, int64_t heads, const KernelChoices& kc) {
    // About decode_mma_split_blocks blocks (two a multiprocessor: two fit in shared memory at
    // Moonlight's and Kimi's shape), at most decode_max_splits (join_splits_kernel takes 64).
    const int64_t blocks = rows * ((heads + kHeadsPerBlock - 1) / kHeadsPerBlock);
    const int64_t want = kc.decode_mma_split_blocks / (blocks > 1 ? blocks : 1);
    return std::clamp<int64_t>(want, 1, std::min<int64_t>(kc.decode_max_splits, 32));
}

void attention_absorbed_mma(const AttnArgs& a, const StepView& st, cudaStream_t s) {
    const MmaLayout L = mma_layout(a.cache);
    std::atomic<int64_t>& opted = opted_smem[device_slot()];
    if (L.bytes > 48 * 1024 && L.bytes > opted.load()) {
        // A failure shows as the launch's error.
        cudaFuncSetAttribute(decode_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             L.bytes);
        cudaFuncSetAttribute(decode_mma_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
        opted.store(L.bytes);
    }
    const dim3 grid(static_cast<unsigned>(a.row_end - a.row_begin),
                    static_cast<unsigned>((a.heads + kHeadsPerBlock - 1) / kHeadsPerBlock),
                    static_cast<unsigned>(a.splits > 1 ? a.splits : 1));
    launch_pdl(decode_mma_kernel, grid, kMmaThreads, static_cast<size_t>(L.bytes), s, a, st, L);
}

}  // namespace myriad::cuda
