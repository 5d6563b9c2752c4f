// Linear layers for few rows (decode): the weight is read once, eight elements per lane per
// step, dequantised in registers and multiplied with F32 activations; one warp per output
// column, up to 4, 8 or 16 rows of x per pass. The same kernel runs the experts of a MoE layer,
// one grid row per tile of an expert's rows (moe_sort lists the tiles on the device), so
// neither a host loop nor an idle block visits the experts that have no rows. Prefill-size
// dense products expand the weight to BF16 tiles (dequant_bf16) for cuBLASLt instead.
#include <cstdlib>
#include <cstring>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/quant_load.cuh"

namespace myriad::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;  // output columns per block

// Steps of eight weights a lane loads before using any (U): a warp then has U loads of
// 32 x 16 (BF16), 8 (FP8) or 4 bytes (NVFP4, INT4) in flight instead of one. With U = 1 (the
// first version) a 4-bit weight row was read 128 bytes per warp at a time, far too little in
// flight to cover the memory latency (MYRIAD_CUDA_SKINNY_UNROLL=1 brings it back, to compare).
// The loads stay in their stored form until used, which keeps the registers per lane low.
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

// Rows [r0, r0 + rows) of group g's output, for the warp's column.
template <QFormat F, bool Glu, int U, int R>
__device__ __forceinline__ void skinny_rows(const SkinnyArgs& a, const QMatrix& w,
                                            const QMatrix& w_up, int64_t col, int64_t r0,
                                            int rows) {
    int64_t xr[R];
#pragma unroll
    for (int m = 0; m < R; ++m) {
        const int64_t r = r0 + (m < rows ? m : 0);
        xr[m] = (a.x_rows ? a.x_rows[r] : r) * a.ldx;
    }
    float acc[R], acc_up[R];
#pragma unroll
    for (int m = 0; m < R; ++m) acc[m] = acc_up[m] = 0.0f;
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

// Grid: x the output columns (a warp each), y the tile (with a.tiles) or the group, z passes
// over the group's rows (without tiles).
template <QFormat F, bool Glu, int U, int R>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock) skinny_kernel(SkinnyArgs a) {
    const int64_t col = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (col >= a.n) return;
    int64_t g = blockIdx.y, begin, end;
    if (a.tiles) {
        if (int64_t(blockIdx.y) >= *a.tile_count) return;
        g = a.tiles[2 * blockIdx.y];
        begin = a.tiles[2 * blockIdx.y + 1];
        end = a.row_begin[g + 1];
        // The tile's rows (tile_rows <= R; MYRIAD_CUDA_SKINNY_UNROLL=1 runs R = 16 on any tiles).
        if (end > begin + a.tile_rows) end = begin + a.tile_rows;
    } else {
        begin = a.row_begin ? a.row_begin[g] : 0;
        end = a.row_begin ? a.row_begin[g + 1] : a.m;
    }
    const QMatrix w = a.table ? a.table[g * a.table_stride + a.table_first] : a.single;
    if (w.codes == nullptr) return;
    QMatrix w_up;
    if constexpr (Glu)
        w_up = a.table ? a.table[g * a.table_stride + a.table_first + 1] : a.single_up;
    const int64_t step = a.tiles ? R : int64_t(gridDim.z) * R;
    for (int64_t r0 = begin + (a.tiles ? 0 : int64_t(blockIdx.z) * R); r0 < end; r0 += step) {
        const int rows = static_cast<int>(end - r0 < R ? end - r0 : R);
        skinny_rows<F, Glu, U, R>(a, w, w_up, col, r0, rows);
    }
}

template <QFormat F>
__global__ void dequant_kernel(QMatrix w, int64_t r0, int64_t r1, uint16_t* out) {
    const int64_t per_row = w.cols / 8;
    const int64_t n = (r1 - r0) * per_row;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = r0 + i / per_row, c = (i % per_row) * 8;
        float v[8];
        load8<F>(w, r, c, v);
        uint4 q;
        q.x = f32_to_bf16_bits(v[0]) | (uint32_t(f32_to_bf16_bits(v[1])) << 16);
        q.y = f32_to_bf16_bits(v[2]) | (uint32_t(f32_to_bf16_bits(v[3])) << 16);
        q.z = f32_to_bf16_bits(v[4]) | (uint32_t(f32_to_bf16_bits(v[5])) << 16);
        q.w = f32_to_bf16_bits(v[6]) | (uint32_t(f32_to_bf16_bits(v[7])) << 16);
        *reinterpret_cast<uint4*>(out + (r - r0) * w.cols + c) = q;
    }
}

template <QFormat F, bool Glu, int U, int R>
void launch_rows(const SkinnyArgs& a, cudaStream_t s) {
    const int64_t passes = (a.max_rows + R - 1) / R;
    dim3 grid(static_cast<unsigned>((a.n + kWarpsPerBlock - 1) / kWarpsPerBlock),
              static_cast<unsigned>(a.tiles ? a.max_tiles : a.groups),
              static_cast<unsigned>(a.tiles ? 1 : (passes < 1 ? 1 : (passes > 64 ? 64 : passes))));
    skinny_kernel<F, Glu, U, R><<<grid, kWarp * kWarpsPerBlock, 0, s>>>(a);
}

template <QFormat F, int U, int R>
void launch_glu(const SkinnyArgs& a, cudaStream_t s) {
    if (a.glu)
        launch_rows<F, true, U, R>(a, s);
    else
        launch_rows<F, false, U, R>(a, s);
}

template <QFormat F>
void launch_skinny(const SkinnyArgs& a, cudaStream_t s) {
    static const bool first_version = [] {
        const char* e = std::getenv("MYRIAD_CUDA_SKINNY_UNROLL");
        return e && std::strcmp(e, "1") == 0;
    }();
    if (first_version) return launch_glu<F, 1, 16>(a, s);
    // Few rows per group (decode): four accumulators per lane keep the registers, and so the
    // warps per multiprocessor, up.
    const int32_t rows = a.tiles ? a.tile_rows : static_cast<int32_t>(a.max_rows);
    if (rows <= 4) return launch_glu<F, kUnroll<F>, 4>(a, s);
    if (rows <= 8) return launch_glu<F, kUnroll<F>, 8>(a, s);
    return launch_glu<F, kUnroll<F>, 16>(a, s);
}

}  // namespace

void skinny_linear(QFormat f, const SkinnyArgs& a, cudaStream_t s) {
    if (a.n == 0 || a.max_rows == 0 || a.groups == 0) return;
    switch (f) {
        case QFormat::Bf16:
            return launch_skinny<QFormat::Bf16>(a, s);
        case QFormat::Fp8Block:
            return launch_skinny<QFormat::Fp8Block>(a, s);
        case QFormat::Nvfp4:
            return launch_skinny<QFormat::Nvfp4>(a, s);
        case QFormat::Int4:
            return launch_skinny<QFormat::Int4>(a, s);
    }
}

void dequant_bf16(QFormat f, const QMatrix& w, int64_t r0, int64_t r1, uint16_t* out,
                  cudaStream_t s) {
    const int64_t n = (r1 - r0) * (w.cols / 8);
    if (n <= 0) return;
    const unsigned grid = static_cast<unsigned>(n / 256 + 1 > 65535 ? 65535 : n / 256 + 1);
    switch (f) {
        case QFormat::Bf16:
            return dequant_kernel<QFormat::Bf16><<<grid, 256, 0, s>>>(w, r0, r1, out);
        case QFormat::Fp8Block:
            return dequant_kernel<QFormat::Fp8Block><<<grid, 256, 0, s>>>(w, r0, r1, out);
        case QFormat::Nvfp4:
            return dequant_kernel<QFormat::Nvfp4><<<grid, 256, 0, s>>>(w, r0, r1, out);
        case QFormat::Int4:
            return dequant_kernel<QFormat::Int4><<<grid, 256, 0, s>>>(w, r0, r1, out);
    }
}

}  // namespace myriad::cuda
