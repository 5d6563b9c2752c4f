// Linear layers for few rows (decode): the weight is read once, eight elements per lane per
// step, dequantised in registers and multiplied with F32 activations; one warp per output
// column, up to 4, 8 or 16 rows of x per pass. The same kernel runs the experts of a MoE layer,
// one grid row per tile of an expert's rows (moe_sort lists the tiles on the device), so
// neither a host loop nor an idle block visits the experts that have no rows. Prefill-size
// dense products expand the weight to BF16 tiles (dequant_bf16) for cuBLASLt instead.

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/quant_load.cuh"

namespace myriad::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;  // output columns per block

// Steps of eight weights a lane loads before using any (U): a warp then has U loads of
// 32 x 16 (BF16), 8 (FP8) or 4 bytes (NVFP4, INT4) in flight instead of one. With U = 1 (the
// first version) a 4-bit weight row was read 128 bytes per warp at a time, far too little in
// flight to cover the memory latency (KernelChoices::skinny_single_load brings it back, to
// compare). The loads stay in their stored form until used, which keeps the registers per lane low.
// BF16 stays at U = 4: U = 8 (a 4 KB row in one round trip) took 90 registers instead of 64, so
// half the blocks fit on a multiprocessor and q_proj's 384 blocks needed a second wave (ncu on
// the H200: 9.0 -> 12.3 us a call).
template <QFormat F>
constexpr int kUnroll = F == QFormat::Bf16 ? 4 : 8;

// Accumulates acc[m] += x[row m] · W[col] (and, with Glu, acc_up[m] += x[row m] · W_up[col])
// over all of K for rows m < rows (at most R), lanes splitting K; xr[m] is row m's offset in x.
// The gate and up rows are loaded together, so a lane has both in flight at once.
template <QFormat F, bool Glu, int U, int R>
__device__ __forceinline__ void dot_rows(const QMatrix& w, const QMatrix& w_up, int64_t col,
                                         const float* x, const int64_t xr[R], int rows, int64_t k,
                                         float acc[R], float acc_up[R]) {
    const int lane = threadIdx.x % kWarp;
    for (int64_t c0 = int64_t(lane) * 8; c0 < k; c0 += kWarp * 8 * U) {
        Raw8<F> raw[U], raw_up[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (c0 + u * kWarp * 8 < k) {
                raw[u] = load_raw<F>(w, col, c0 + u * kWarp * 8);
                if constexpr (Glu) raw_up[u] = load_raw<F>(w_up, col, c0 + u * kWarp * 8);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t c = c0 + u * kWarp * 8;
            if (c >= k) break;
            // Unscaled elements; the scale multiplies each row's eight-element sum (one scale
            // covers the eight), which saves eight multiplications per step.
            float wv[8], uv[8];
            const float f = expand_unscaled<F>(raw[u], w.global_scale, wv);
            [[maybe_unused]] float fu = 1.0f;
            if constexpr (Glu) fu = expand_unscaled<F>(raw_up[u], w_up.global_scale, uv);
#pragma unroll
            for (int m = 0; m < R; ++m) {
                if (m < rows) {
                    const float4* xp = reinterpret_cast<const float4*>(x + xr[m] + c);
                    const float4 a = xp[0], b = xp[1];
                    const float d = a.x * wv[0] + a.y * wv[1] + a.z * wv[2] + a.w * wv[3] +
                                    b.x * wv[4] + b.y * wv[5] + b.z * wv[6] + b.w * wv[7];
                    acc[m] = F == QFormat::Bf16 ? acc[m] + d : fmaf(d, f, acc[m]);
                    if constexpr (Glu) {
                        const float e = a.x * uv[0] + a.y * uv[1] + a.z * uv[2] + a.w * uv[3] +
                                        b.x * uv[4] + b.y * uv[5] + b.z * uv[6] + b.w * uv[7];
                        acc_up[m] = F == QFormat::Bf16 ? acc_up[m] + e : fmaf(e, fu, acc_up[m]);
                    }
                }
            }
        }
    }
}

// Row offsets in x of rows [r0, r0 + rows) (the slots past `rows` repeat r0), and zeroed sums.
template <int R>
__device__ __forceinline__ void start_rows(const SkinnyArgs& a, int64_t r0, int rows, int64_t xr[R],
                                           float acc[R], float acc_up[R]) {
#pragma unroll
    for (int m = 0; m < R; ++m) {
        const int64_t r = r0 + (m < rows ? m : 0);
        xr[m] = (a.x_rows ? a.x_rows[r] : r) * a.ldx;
        acc[m] = acc_up[m] = 0.0f;
    }
}

// Rows [r0, r0 + rows) of group g's output, for the warp's column.
template <QFormat F, bool Glu, int U, int R>
__device__ __forceinline__ void skinny_rows(const SkinnyArgs& a, const QMatrix& w,
                                            const QMatrix& w_up, int64_t col, int64_t r0,
                                            int rows) {
    int64_t xr[R];
    float acc[R], acc_up[R];
    start_rows<R>(a, r0, rows, xr, acc, acc_up);
    dot_rows<F, Glu, U, R>(w, w_up, col, a.x, xr, rows, a.k, acc, acc_up);
    const int lane = threadIdx.x % kWarp;
#pragma unroll
    for (int m = 0; m < R; ++m) {
        if (m < rows) {
            const float s = warp_sum(acc[m]);
            float result = s;
            if constexpr (Glu) {
                const float u = warp_sum(acc_up[m]);
                result = s / (1.0f + expf(-s)) * u;
            }
            if (lane == 0) a.out[(r0 + m) * a.ldo + col] = result;
        }
    }
}

// The group g and rows [begin, end) of grid row blockIdx.y: a tile (with a.tiles; tile_rows at
// most) or a whole group. False for a tile past *tile_count (the block has nothing to do).
__device__ __forceinline__ bool block_group(const SkinnyArgs& a, int64_t& g, int64_t& begin,
                                            int64_t& end) {
    g = blockIdx.y;
    if (a.tiles) {
        if (int64_t(blockIdx.y) >= *a.tile_count) return false;
        g = a.tiles[2 * blockIdx.y];
        begin = a.tiles[2 * blockIdx.y + 1];
        end = a.row_begin[g + 1];
        // The tile's rows (tile_rows <= R; skinny_single_load runs R = 16 on any tiles).
        if (end > begin + a.tile_rows) end = begin + a.tile_rows;
    } else {
        begin = a.row_begin ? a.row_begin[g] : 0;
        end = a.row_begin ? a.row_begin[g + 1] : a.m;
    }
    return true;
}

// Group g's matrix (up: its up matrix, with glu).
__device__ __forceinline__ QMatrix group_matrix(const SkinnyArgs& a, int64_t g, bool up) {
    if (a.table) return a.table[g * a.table_stride + a.table_first + (up ? 1 : 0)];
    return up ? a.single_up : a.single;
}

// Grid: x the output columns (a warp each), y the tile (with a.tiles) or the group, z passes
// over the group's rows (without tiles).
template <QFormat F, bool Glu, int U, int R>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock) skinny_kernel(SkinnyArgs a) {
    pdl_wait();  // launched early (launch_pdl): everything here follows the previous kernel
    pdl_launch_dependents();
    const int64_t col = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (col >= a.n) return;
    int64_t g, begin, end;
    if (!block_group(a, g, begin, end)) return;
    const QMatrix w = group_matrix(a, g, false);
    if (w.codes == nullptr) return;
    QMatrix w_up;
    if constexpr (Glu) w_up = group_matrix(a, g, true);
    const int64_t step = a.tiles ? R : int64_t(gridDim.z) * R;
    for (int64_t r0 = begin + (a.tiles ? 0 : int64_t(blockIdx.z) * R); r0 < end; r0 += step) {
        const int rows = static_cast<int>(end - r0 < R ? end - r0 : R);
        skinny_rows<F, Glu, U, R>(a, w, w_up, col, r0, rows);
    }
}

template <QFormat F>
__global__ void dequant_kernel(QMatrix w, int64_t r0, int64_t r1, uint16_t* out, bool residual) {
    const int64_t per_row = w.cols / 8;
    const int64_t n = (r1 - r0) * per_row;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = r0 + i / per_row, c = (i % per_row) * 8;
        float v[8];
        load8<F>(w, r, c, v);
        if (residual)  // what the BF16 rounding of each value leaves out
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] -= bf16_bits_to_f32(f32_to_bf16_bits(v[j]));
        uint4 q;
        q.x = f32_to_bf16_bits(v[0]) | (uint32_t(f32_to_bf16_bits(v[1])) << 16);
        q.y = f32_to_bf16_bits(v[2]) | (uint32_t(f32_to_bf16_bits(v[3])) << 16);
        q.z = f32_to_bf16_bits(v[4]) | (uint32_t(f32_to_bf16_bits(v[5])) << 16);
        q.w = f32_to_bf16_bits(v[6]) | (uint32_t(f32_to_bf16_bits(v[7])) << 16);
        *reinterpret_cast<uint4*>(out + (r - r0) * w.cols + c) = q;
    }
}

// ---- v2: decode tiles of at most four rows, 16-byte loads ----
// v1 gives each warp one column and 4-byte loads per lane; at batch 1 its gate+up launch held
// 124 registers, two blocks per multiprocessor and ran at 610 GB/s (ncu, H200), bound by
// latency. v2 loads 16 bytes of codes per lane (one "segment": 32 4-bit or 16 FP8 codes and
// the scales they need), splits each column's K over tpc (4 to 32) lanes that meet in a
// shuffle reduction, and caps the registers so several blocks fit per multiprocessor. The rows
// of x are staged once per block in shared memory, 2048 elements per row at a time (a round);
// each lane's loads of a round are issued before the staging, so they overlap it.
constexpr int kV2Threads = 256;
// Three blocks per multiprocessor (80 registers) with one row; four rows' accumulators, or
// INT4's second scale per Glu segment, do not fit in 80 without spilling, so two.
template <QFormat F, bool Glu, int R>
constexpr int kV2MinBlocks = R == 1 && !(F == QFormat::Int4 && Glu) ? 3 : 2;
constexpr int kV2Chunk = 2048;                  // x elements per row and round
constexpr int kV2ChunkPhys = kV2Chunk * 9 / 8;  // a 16-byte pad after every 128 bytes

template <QFormat F>
constexpr int kSegElems = F == QFormat::Bf16 ? 8 : (F == QFormat::Fp8Block ? 16 : 32);
// Segments a lane loads per round before using any: 16 bytes x U (x 2 with Glu) in flight.
template <bool Glu>
constexpr int kV2Unroll = Glu ? 4 : 8;

template <QFormat F>
struct Seg;
template <>
struct Seg<QFormat::Bf16> {
    uint4 q;
};
template <>
struct Seg<QFormat::Nvfp4> {
    uint4 q;
    uint32_t s;  // the two e4m3 scale bytes: codes 0-15 in the low byte, 16-31 in the next
};
template <>
struct Seg<QFormat::Int4> {
    uint4 q;
    float s[2];  // codes 0-15, 16-31
};
template <>
struct Seg<QFormat::Fp8Block> {
    uint4 q;
    float s;
};

// What v2's loads assume of a matrix: 16-byte aligned rows of codes and a segment's scales
// in at most two blocks, each covering one half (NVFP4: two adjacent bytes read as one u16).
template <QFormat F>
__host__ __device__ inline bool seg_fits(const QMatrix& w) {
    if (reinterpret_cast<uintptr_t>(w.codes) % 16 != 0 || w.row_bytes % 16 != 0) return false;
    if constexpr (F == QFormat::Bf16) return true;
    if (w.block_cols % 16 != 0 || w.col_phase % 16 != 0) return false;
    if constexpr (F == QFormat::Nvfp4)
        return w.block_cols == 16 && w.col_phase == 0 && w.scale_stride % 2 == 0 &&
               reinterpret_cast<uintptr_t>(w.scales) % 2 == 0;
    return true;
}

// One row of a matrix as v2 reads it, resolved once per column so that the loop's offsets
// are 32-bit and the QMatrix need not stay in registers.
template <QFormat F>
struct SegRow {
    const uint8_t* codes = nullptr;
    const void* scales = nullptr;  // the row's scales (FP8: its block row's)
    int32_t block_cols = 1, col_phase = 0;
    float global_scale = 1.0f;
};

template <QFormat F>
__device__ __forceinline__ SegRow<F> seg_row(const QMatrix& w, int64_t r) {
    SegRow<F> row;
    row.codes = w.codes + r * w.row_bytes;
    if constexpr (F == QFormat::Bf16) return row;
    const int64_t srow = F == QFormat::Fp8Block ? (r + w.row_phase) / w.block_rows : r;
    const int64_t esize = F == QFormat::Nvfp4 ? 1 : 4;
    row.scales = static_cast<const uint8_t*>(w.scales) + srow * w.scale_stride * esize;
    row.block_cols = w.block_cols;
    row.col_phase = w.col_phase;
    row.global_scale = w.global_scale;
    return row;
}

// Elements c..c+kSegElems-1 of the row (c a multiple of kSegElems), as stored.
template <QFormat F>
__device__ __forceinline__ Seg<F> load_seg(const SegRow<F>& w, uint32_t c) {
    Seg<F> g;
    if constexpr (F == QFormat::Bf16) {
        g.q = *reinterpret_cast<const uint4*>(w.codes + c * 2);
    } else if constexpr (F == QFormat::Nvfp4) {
        g.q = *reinterpret_cast<const uint4*>(w.codes + c / 2);
        g.s = *(reinterpret_cast<const uint16_t*>(w.scales) + c / 32);
    } else if constexpr (F == QFormat::Int4) {
        g.q = *reinterpret_cast<const uint4*>(w.codes + c / 2);
        const float* sr = static_cast<const float*>(w.scales);
        const uint32_t bc = static_cast<uint32_t>(w.block_cols);
        g.s[0] = sr[(c + w.col_phase) / bc];
        g.s[1] = sr[(c + 16 + w.col_phase) / bc];
    } else {
        g.q = *reinterpret_cast<const uint4*>(w.codes + c);
        g.s = static_cast<const float*>(
            w.scales)[(c + w.col_phase) / static_cast<uint32_t>(w.block_cols)];
    }
    return g;
}

// Eight elements i of a segment as v1's stored form (expand_unscaled takes it from there).
template <QFormat F, int I>
__device__ __forceinline__ Raw8<F> seg_word(const Seg<F>& g) {
    constexpr int kWords = kSegElems<F> / 8;
    static_assert(I < kWords);
    const uint32_t q[4] = {g.q.x, g.q.y, g.q.z, g.q.w};
    Raw8<F> raw;
    if constexpr (F == QFormat::Bf16) {
        raw.q = g.q;
    } else if constexpr (F == QFormat::Nvfp4) {
        raw.q = q[I];
        raw.s = (g.s >> (8 * (I / 2))) & 0xffu;
    } else if constexpr (F == QFormat::Int4) {
        raw.q = q[I];
        raw.s = g.s[I / 2];
    } else {
        raw.q = make_uint2(q[2 * I], q[2 * I + 1]);
        raw.s = g.s;
    }
    return raw;
}

// The factor of the segment's half h (its first or last 16 elements), as expand_unscaled's.
// Computed once per half: expand_unscaled's own is then unused and dropped by the compiler.
template <QFormat F>
__device__ __forceinline__ float seg_factor(const Seg<F>& g, float global_scale, int h) {
    if constexpr (F == QFormat::Bf16) {
        return 1.0f;
    } else if constexpr (F == QFormat::Nvfp4) {
        const __half_raw sh = __nv_cvt_fp8_to_halfraw(
            static_cast<__nv_fp8_storage_t>((g.s >> (8 * h)) & 0xffu), __NV_E4M3);
        return __half2float(__half(sh)) * (global_scale * 16384.0f);
    } else if constexpr (F == QFormat::Int4) {
        return g.s[h];
    } else {
        return g.s;
    }
}

// acc[m] += the segment's elements 8I.. · x row m (xs: the row's staged round, at the
// segment's first 16-byte chunk), for words I.. of the segment; f, fu: seg_factor's.
template <QFormat F, bool Glu, int R, int I>
__device__ __forceinline__ void seg_dot(const Seg<F>& g, const Seg<F>& gu, const float f[2],
                                        const float fu[2], const float4* xs, int rows, float acc[R],
                                        float acc_up[R]) {
    if constexpr (I < kSegElems<F> / 8) {
        constexpr int h = (I * 8) / 16;
        float wv[8], uv[8];
        expand_unscaled<F>(seg_word<F, I>(g), 1.0f, wv);
        if constexpr (Glu) expand_unscaled<F>(seg_word<F, I>(gu), 1.0f, uv);
#pragma unroll
        for (int m = 0; m < R; ++m) {
            if (m < rows) {
                const float4 a = xs[m * (kV2ChunkPhys / 4) + 2 * I];
                const float4 b = xs[m * (kV2ChunkPhys / 4) + 2 * I + 1];
                const float d = a.x * wv[0] + a.y * wv[1] + a.z * wv[2] + a.w * wv[3] +
                                b.x * wv[4] + b.y * wv[5] + b.z * wv[6] + b.w * wv[7];
                acc[m] = fmaf(d, f[h], acc[m]);
                if constexpr (Glu) {
                    const float e = a.x * uv[0] + a.y * uv[1] + a.z * uv[2] + a.w * uv[3] +
                                    b.x * uv[4] + b.y * uv[5] + b.z * uv[6] + b.w * uv[7];
                    acc_up[m] = fmaf(e, fu[h], acc_up[m]);
                }
            }
        }
        seg_dot<F, Glu, R, I + 1>(g, gu, f, fu, xs, rows, acc, acc_up);
    }
}

// The end of a product whose K is split over `split` blocks (grid z): each block has written its
// share's sums of columns [c0, c0 + cols) and rows [r0, r1) into a.split_partials; the block
// that counts last (counter `slot`, reset by it for the next launch or graph replay) adds the
// shares in order 0, 1, ..., so the result's bits do not depend on which block ends last.
template <bool Glu>
__device__ __forceinline__ void split_join(const SkinnyArgs& a, int split, int64_t slot, int64_t c0,
                                           int64_t cols, int64_t r0, int64_t r1, int& last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(a.split_counters + slot, 1u) == static_cast<unsigned>(split - 1);
        if (last) atomicExch(a.split_counters + slot, 0u);
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int64_t plane = int64_t(split) * a.m * a.n;
    for (int64_t i = threadIdx.x; i < (r1 - r0) * cols; i += blockDim.x) {
        const int64_t r = r0 + i / cols, c = c0 + i % cols;
        if (c >= a.n) continue;
        float s = 0.0f, u = 0.0f;
        for (int z = 0; z < split; ++z) {
            const float* part = a.split_partials + (z * a.m + r) * a.n + c;
            s += __ldcg(part);
            if constexpr (Glu) u += __ldcg(part + plane);
        }
        float result = s;
        if constexpr (Glu) result = s / (1.0f + expf(-s)) * u;
        a.out[r * a.ldo + c] = result;
    }
}

// Grid: x the groups of 256 / tpc columns times `fold`, y the tile (with a.tiles) or the group,
// z passes over the group's rows (without tiles), as v1. tpc = 1 << tpc_log2 lanes share a
// column. Without tiles, the first `fold` passes of R rows are folded into x (block x: column
// group x / fold, pass x % fold), so the blocks that read the same weights for different rows
// run side by side and all but the first find them in L2.
template <QFormat F, bool Glu, int R>
__global__ void __launch_bounds__(kV2Threads, kV2MinBlocks<F, Glu, R>)
    skinny_v2_kernel(SkinnyArgs a, int tpc_log2, int fold, int split) {
    extern __shared__ float4 xs[];  // [R][kV2ChunkPhys / 4], chunk q of a row at q + q / 8
    __shared__ int last_of_split;
    constexpr int E = kSegElems<F>, U = kV2Unroll<Glu>;
    const int tpc = 1 << tpc_log2, sub = threadIdx.x & (tpc - 1);
    const int64_t cols_per_block = kV2Threads >> tpc_log2;
    const int64_t cg = int64_t(blockIdx.x) / fold, pass = int64_t(blockIdx.x) % fold;
    const int64_t col = cg * cols_per_block + (threadIdx.x >> tpc_log2);
    // Launched early (launch_pdl). A dense product's first weights are loaded before waiting for
    // the previous kernel; the experts' tiles, x rows and matrices come from earlier kernels, so
    // there everything waits.
    const bool early_loads = a.tiles == nullptr && a.x_rows == nullptr;
    if (!early_loads) pdl_wait();
    pdl_launch_dependents();
    int64_t g, begin, end;
    if (!block_group(a, g, begin, end)) return;
    const QMatrix w = group_matrix(a, g, false);
    if (w.codes == nullptr) {
        pdl_wait();
        return;
    }
    QMatrix w_up;
    if constexpr (Glu) w_up = group_matrix(a, g, true);
    // With split > 1 (dense products only, one z pass: launch_v2), z is the share of K.
    const int64_t zpass = split > 1 ? 0 : int64_t(blockIdx.z);
    const int64_t step = a.tiles ? R : int64_t(split > 1 ? 1 : gridDim.z) * fold * R;
    const int64_t first = begin + (a.tiles ? 0 : (zpass * fold + pass) * R);
    if (!seg_fits<F>(w) || (Glu && !seg_fits<F>(w_up))) {
        pdl_wait();
        // A matrix of the table that v2 cannot read (the host checked k and x only): v1 with one
        // load in flight, a warp per column of the block's. The branch is uniform per block.
        const int64_t col_end = (cg + 1) * cols_per_block;
        for (int64_t c = cg * cols_per_block + threadIdx.x / kWarp; c < col_end && c < a.n;
             c += kV2Threads / kWarp)
            for (int64_t r0 = first; r0 < end; r0 += step) {
                const int rows = static_cast<int>(end - r0 < R ? end - r0 : R);
                skinny_rows<F, Glu, 1, R>(a, w, w_up, c, r0, rows);
            }
        return;
    }
    const bool active = col < a.n;
    const int segs = static_cast<int>(a.k / E);
    // This block's rounds of tpc * U segments: all, or share blockIdx.z of `split`.
    const int round_segs = tpc * U;
    const int rounds = (segs + round_segs - 1) / round_segs;
    const int seg_begin =
        split > 1 ? static_cast<int>(blockIdx.z) * rounds / split * round_segs : 0;
    const int seg_end =
        split > 1 ? min(segs, (static_cast<int>(blockIdx.z) + 1) * rounds / split * round_segs)
                  : segs;
    bool waited = !early_loads;
    SegRow<F> wr, ur;
    if (active) {
        wr = seg_row<F>(w, col);
        if constexpr (Glu) ur = seg_row<F>(w_up, col);
    }
#pragma unroll 1
    for (int64_t r0 = first; r0 < end; r0 += step) {
        const int rows = static_cast<int>(end - r0 < R ? end - r0 : R);
        int64_t xr[R];
        float acc[R], acc_up[R];
        start_rows<R>(a, r0, rows, xr, acc, acc_up);
#pragma unroll 1
        for (int base = seg_begin; base < seg_end; base += round_segs) {
            Seg<F> gw[U], gu[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int sg = base + sub + u * tpc;
                if (active && sg < seg_end) {
                    gw[u] = load_seg<F>(wr, static_cast<uint32_t>(sg * E));
                    if constexpr (Glu) gu[u] = load_seg<F>(ur, static_cast<uint32_t>(sg * E));
                }
            }
            // Stage this round's x (the previous round's, or pass's, reads done first).
            const int c0 = base * E;
            const int span = seg_end * E - c0 < round_segs * E ? seg_end * E - c0 : round_segs * E;
            const int chunks = span / 4;
            if (!waited) {  // the first round's weights are in flight: now x must be ready
                pdl_wait();
                waited = true;
            }
            __syncthreads();
#pragma unroll
            for (int m = 0; m < R; ++m) {
                if (m < rows) {
                    const float4* src = reinterpret_cast<const float4*>(a.x + xr[m] + c0);
                    for (int q = threadIdx.x; q < chunks; q += kV2Threads)
                        xs[m * (kV2ChunkPhys / 4) + q + q / 8] = src[q];
                }
            }
            __syncthreads();
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int sg = base + sub + u * tpc;
                if (active && sg < seg_end) {
                    // The segment's first chunk in the round, padded: lanes of a quarter warp
                    // read consecutive segments, 9 chunks apart, so different bank groups.
                    const int q0 = (sg - base) * (E / 4);
                    const float f[2] = {seg_factor<F>(gw[u], wr.global_scale, 0),
                                        seg_factor<F>(gw[u], wr.global_scale, 1)};
                    float fu[2] = {1.0f, 1.0f};
                    if constexpr (Glu) {
                        fu[0] = seg_factor<F>(gu[u], ur.global_scale, 0);
                        fu[1] = seg_factor<F>(gu[u], ur.global_scale, 1);
                    }
                    seg_dot<F, Glu, R, 0>(gw[u], gu[u], f, fu, xs + q0 + q0 / 8, rows, acc, acc_up);
                }
            }
        }
        // Lanes sub of a column are tpc consecutive lanes of one warp; every lane takes part.
#pragma unroll
        for (int m = 0; m < R; ++m) {
            if (m < rows) {
                float s = acc[m];
                [[maybe_unused]] float u = acc_up[m];
                for (int o = tpc / 2; o > 0; o >>= 1) {
                    s += __shfl_xor_sync(0xffffffffu, s, o);
                    if constexpr (Glu) u += __shfl_xor_sync(0xffffffffu, u, o);
                }
                if (split > 1) {  // this share's sums; the block that ends last adds them
                    if (active && sub == 0) {
                        float* part = a.split_partials + (blockIdx.z * a.m + r0 + m) * a.n + col;
                        part[0] = s;
                        if constexpr (Glu) part[int64_t(split) * a.m * a.n] = u;
                    }
                    continue;
                }
                float result = s;
                if constexpr (Glu) result = s / (1.0f + expf(-s)) * u;
                if (active && sub == 0) a.out[(r0 + m) * a.ldo + col] = result;
            }
        }
    }
    if (!waited) pdl_wait();  // a pass with no rows: still not done before the previous kernel
    if (split > 1)
        split_join<Glu>(a, split, blockIdx.x, cg * cols_per_block, cols_per_block, first,
                        end < first + R ? end : first + R, last_of_split);
}

template <QFormat F, bool Glu, int U, int R>
void launch_rows(const SkinnyArgs& a, cudaStream_t s) {
    const int64_t passes = (a.max_rows + R - 1) / R;
    dim3 grid(static_cast<unsigned>((a.n + kWarpsPerBlock - 1) / kWarpsPerBlock),
              static_cast<unsigned>(a.tiles ? a.max_tiles : a.groups),
              static_cast<unsigned>(a.tiles ? 1 : (passes < 1 ? 1 : (passes > 64 ? 64 : passes))));
    launch_pdl(skinny_kernel<F, Glu, U, R>, grid, dim3(kWarp * kWarpsPerBlock), 0, s, a);
}

template <QFormat F, int U, int R>
void launch_glu(const SkinnyArgs& a, cudaStream_t s) {
    if (a.glu)
        launch_rows<F, true, U, R>(a, s);
    else
        launch_rows<F, false, U, R>(a, s);
}

// v2 where it applies (KernelChoices::skinny V1 keeps v1 throughout, to compare):
// a quantised format, at most four rows per tile or group, K a multiple of the segment, 16-byte
// x rows, and (without a table) matrices v2 can read; the kernel checks a table's matrices.

// Shares of K for a dense product of `blocks` column blocks (and z row passes) whose K takes
// `rounds` rounds: enough to make kc.skinny_split_blocks blocks, at most one round each and
// kc.skinny_max_split, where the caller's workspace holds the shares' sums; 1: no split. A
// product that fills the multiprocessors already splits only from skinny_split_full_rounds.
// (A product of few columns and large K, such as Kimi-K2's replicated kv_a of 576 x 7168 at
// TP 8, otherwise runs 72 blocks on 132 multiprocessors, each through four rounds.)
int skinny_split(const SkinnyArgs& a, const KernelChoices& kc, int64_t blocks, int64_t z,
                 int64_t rounds, bool glu) {
    if (a.tiles || a.table || a.groups != 1 || a.x_rows || z != 1 || rounds < 2 ||
        a.split_partials == nullptr || blocks >= kc.skinny_split_blocks)
        return 1;
    const int64_t sms = kc.gpu.sms > 0 ? kc.gpu.sms : 132;
    if (blocks >= sms && rounds < kc.skinny_split_full_rounds) return 1;
    int64_t split = (kc.skinny_split_blocks + blocks - 1) / blocks;
    split = std::min(std::min(split, rounds), kc.skinny_max_split);
    while (split > 1 && split * a.m * a.n * (glu ? 2 : 1) > a.split_floats) --split;
    if (blocks > a.split_counter_count) return 1;
    return static_cast<int>(split);
}

template <QFormat F, bool Glu>
bool launch_v2(const SkinnyArgs& a, int32_t rows, const KernelChoices& kc, cudaStream_t s) {
    constexpr int E = kSegElems<F>, U = kV2Unroll<Glu>;
    if (a.k <= 0 || a.k % E != 0 || a.ldx % 4 != 0 || reinterpret_cast<uintptr_t>(a.x) % 16 != 0)
        return false;
    if (!a.table && (!seg_fits<F>(a.single) || (Glu && !seg_fits<F>(a.single_up)))) return false;
    // Lanes per column: enough that one round covers K where it can (one x staging, one
    // reduction, one memory round trip), at most 32 (a column per warp) and a round's x within
    // kV2Chunk. (At most 16 made BF16 products of K = 2048 take two rounds, and the shared
    // experts' gate and up four: CUPTI, H200, batch 1.)
    const int64_t segs = a.k / E;
    int tpc_log2 = 2;
    while ((int64_t(U) << tpc_log2) < segs && tpc_log2 < 5 && (U * E << (tpc_log2 + 1)) <= kV2Chunk)
        ++tpc_log2;
    const int64_t cols_per_block = kV2Threads >> tpc_log2;
    const int64_t max_rows = a.max_rows;
    const int64_t r = rows < max_rows ? rows : max_rows;
    auto go = [&](auto kernel, int64_t rr) {
        const int64_t passes = (a.max_rows + rr - 1) / rr;
        // Up to four passes folded into x (16 rows: the skinny kernels' most).
        const int64_t fold = !a.tiles && passes <= 4 ? passes : 1;
        const int64_t z = (passes + fold - 1) / fold;
        const int64_t blocks = (a.n + cols_per_block - 1) / cols_per_block * fold;
        const int64_t round_segs = int64_t(U) << tpc_log2;
        const int split = skinny_split(a, kc, blocks, z, (segs + round_segs - 1) / round_segs, Glu);
        dim3 grid(static_cast<unsigned>(blocks),
                  static_cast<unsigned>(a.tiles ? a.max_tiles : a.groups),
                  static_cast<unsigned>(split > 1 ? split
                                        : a.tiles ? 1
                                                  : (z > 64 ? 64 : z)));
        const size_t smem = static_cast<size_t>(rr) * kV2ChunkPhys * sizeof(float);
        launch_pdl(kernel, grid, dim3(kV2Threads), smem, s, a, tpc_log2, static_cast<int>(fold),
                   split);
    };
    if (r <= 1)
        go(skinny_v2_kernel<F, Glu, 1>, 1);
    else
        go(skinny_v2_kernel<F, Glu, 4>, 4);
    return true;
}

template <QFormat F>
void launch_skinny(const SkinnyArgs& a, const KernelChoices& kc, cudaStream_t s) {
    if (kc.skinny_single_load) return launch_glu<F, 1, 16>(a, s);
    // Few rows per group (decode): four accumulators per lane keep the registers, and so the
    // warps per multiprocessor, up.
    // v2 for tiles of up to four rows, and for dense products of up to 16 rows in passes of four
    // (v1 took 24 us for an 8-row BF16 product of 12.6 MB: CUPTI, H200, batch 8).
    const int32_t rows = a.tiles ? a.tile_rows : static_cast<int32_t>(a.max_rows);
    if ((rows <= 4 || (!a.tiles && rows <= 16)) && kc.skinny != KernelVariant::V1 &&
        (a.glu ? launch_v2<F, true>(a, rows, kc, s) : launch_v2<F, false>(a, rows, kc, s)))
        return;
    if (rows <= 4) return launch_glu<F, kUnroll<F>, 4>(a, s);
    // A narrow product over many rows (the router's 64 or so columns, at batch 64 or a prefill
    // chunk) takes few column blocks: passes of four rows multiply the blocks by four (ncu,
    // H200: 16-row passes took 38 us for 64 rows of Moonlight's router, 4-row passes 11.5 us).
    const int64_t col_blocks = (a.n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (!a.tiles && col_blocks * ((rows + 15) / 16) < kc.narrow_product_blocks)
        return launch_glu<F, kUnroll<F>, 4>(a, s);
    if (rows <= 8) return launch_glu<F, kUnroll<F>, 8>(a, s);
    return launch_glu<F, kUnroll<F>, 16>(a, s);
}

}  // namespace

void skinny_linear(QFormat f, const SkinnyArgs& a, const KernelChoices& kc, cudaStream_t s) {
    if (a.n == 0 || a.max_rows == 0 || a.groups == 0) return;
    switch (f) {
        case QFormat::Bf16:
            return launch_skinny<QFormat::Bf16>(a, kc, s);
        case QFormat::Fp8Block:
            return launch_skinny<QFormat::Fp8Block>(a, kc, s);
        case QFormat::Nvfp4:
            return launch_skinny<QFormat::Nvfp4>(a, kc, s);
        case QFormat::Int4:
            return launch_skinny<QFormat::Int4>(a, kc, s);
    }
}

void dequant_bf16(QFormat f, const QMatrix& w, int64_t r0, int64_t r1, uint16_t* out,
                  cudaStream_t s, bool residual) {
    const int64_t n = (r1 - r0) * (w.cols / 8);
    if (n <= 0) return;
    const unsigned grid = static_cast<unsigned>(n / 256 + 1 > 65535 ? 65535 : n / 256 + 1);
    switch (f) {
        case QFormat::Bf16:
            return dequant_kernel<QFormat::Bf16><<<grid, 256, 0, s>>>(w, r0, r1, out, residual);
        case QFormat::Fp8Block:
            return dequant_kernel<QFormat::Fp8Block><<<grid, 256, 0, s>>>(w, r0, r1, out, residual);
        case QFormat::Nvfp4:
            return dequant_kernel<QFormat::Nvfp4><<<grid, 256, 0, s>>>(w, r0, r1, out, residual);
        case QFormat::Int4:
            return dequant_kernel<QFormat::Int4><<<grid, 256, 0, s>>>(w, r0, r1, out, residual);
    }
}

}  // namespace myriad::cuda
