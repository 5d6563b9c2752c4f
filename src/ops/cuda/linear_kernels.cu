// Linear layers for few rows (decode): the weight is read once, eight elements per lane per
// step, dequantised in registers and multiplied with F32 activations; one warp per output
// column, up to kMaxRows rows of x per pass. The same kernel runs the experts of a MoE layer,
// one grid row per expert, so no host loop visits the experts. Prefill-size products expand the
// weight to BF16 tiles (dequant_bf16) for cuBLASLt instead.
#include <cstdlib>
#include <cstring>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"

namespace myriad::cuda {

namespace {

constexpr int kMaxRows = 16;       // rows of x per pass (the accumulators per lane)
constexpr int kWarpsPerBlock = 8;  // output columns per block

// Elements c..c+7 of row r of `w` as floats (c a multiple of 8).
template <QFormat F>
__device__ __forceinline__ void load8(const QMatrix& w, int64_t r, int64_t c, float v[8]) {
    const uint8_t* row = w.codes + r * w.row_bytes;
    if constexpr (F == QFormat::Bf16) {
        const uint4 q = *reinterpret_cast<const uint4*>(row + c * 2);
        const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = __uint_as_float(words[i] << 16);
            v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
        }
    } else if constexpr (F == QFormat::Fp8Block) {
        const uint2 q = *reinterpret_cast<const uint2*>(row + c);
        const float s = static_cast<const float*>(
            w.scales)[((r + w.row_phase) / w.block_rows) * w.scale_stride +
                      (c + w.col_phase) / w.block_cols];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[i] = e4m3_to_f32((q.x >> (8 * i)) & 0xffu) * s;
            v[4 + i] = e4m3_to_f32((q.y >> (8 * i)) & 0xffu) * s;
        }
    } else if constexpr (F == QFormat::Nvfp4) {
        const uint32_t q = *reinterpret_cast<const uint32_t*>(row + c / 2);
        const uint8_t sc = static_cast<const uint8_t*>(
            w.scales)[r * w.scale_stride + (c + w.col_phase) / w.block_cols];
        const float s = e4m3_to_f32(sc) * w.global_scale;
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = e2m1_to_f32((q >> (4 * i)) & 15u) * s;  // low first
    } else {  // Int4: q + 8, eight per little-endian int32, element 8j + i at bits 4i
        const uint32_t q = *reinterpret_cast<const uint32_t*>(row + c / 2);
        const float s = static_cast<const float*>(
            w.scales)[r * w.scale_stride + (c + w.col_phase) / w.block_cols];
#pragma unroll
        for (int i = 0; i < 8; ++i)
            v[i] = static_cast<float>(static_cast<int>((q >> (4 * i)) & 15u) - 8) * s;
    }
}

// Steps of eight weights a lane loads before using any (U): a warp then has U loads of
// 32 x 16 (BF16), 8 (FP8) or 4 bytes (NVFP4, INT4) in flight instead of one. With U = 1 (the
// first version) a 4-bit weight row was read 128 bytes per warp at a time, far too little in
// flight to cover the memory latency (MYRIAD_CUDA_SKINNY_UNROLL=1 brings it back, to compare).
template <QFormat F>
constexpr int kUnroll = F == QFormat::Bf16 ? 4 : 8;

// Accumulates acc[m] += x[row m] · W[col] over all of K for rows m < rows, lanes splitting K.
template <QFormat F, int U>
__device__ __forceinline__ void dot_rows(const QMatrix& w, int64_t col, const float* x, int64_t ldx,
                                         const int32_t* x_rows, int64_t row0, int rows, int64_t k,
                                         float acc[kMaxRows]) {
    const int lane = threadIdx.x % kWarp;
    for (int64_t c0 = int64_t(lane) * 8; c0 < k; c0 += kWarp * 8 * U) {
        float wv[U][8];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (c0 + u * kWarp * 8 < k) load8<F>(w, col, c0 + u * kWarp * 8, wv[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t c = c0 + u * kWarp * 8;
            if (c >= k) break;
#pragma unroll
            for (int m = 0; m < kMaxRows; ++m) {
                if (m < rows) {
                    const int64_t xr = x_rows ? x_rows[row0 + m] : row0 + m;
                    const float4* xp = reinterpret_cast<const float4*>(x + xr * ldx + c);
                    const float4 a = xp[0], b = xp[1];
                    acc[m] += a.x * wv[u][0] + a.y * wv[u][1] + a.z * wv[u][2] + a.w * wv[u][3] +
                              b.x * wv[u][4] + b.y * wv[u][5] + b.z * wv[u][6] + b.w * wv[u][7];
                }
            }
        }
    }
}

template <QFormat F, bool Glu, int U>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock) skinny_kernel(SkinnyArgs a) {
    const int64_t g = blockIdx.y;
    const int64_t col = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (col >= a.n) return;
    const QMatrix& w = a.table ? a.table[g * a.table_stride + a.table_first] : a.single;
    if (w.codes == nullptr) return;
    const int64_t begin = a.row_begin ? a.row_begin[g] : 0;
    const int64_t end = a.row_begin ? a.row_begin[g + 1] : a.m;
    const int lane = threadIdx.x % kWarp;
    for (int64_t r0 = begin + int64_t(blockIdx.z) * kMaxRows; r0 < end;
         r0 += int64_t(gridDim.z) * kMaxRows) {
        const int rows = static_cast<int>(end - r0 < kMaxRows ? end - r0 : kMaxRows);
        float acc[kMaxRows], acc_up[kMaxRows];
#pragma unroll
        for (int m = 0; m < kMaxRows; ++m) acc[m] = acc_up[m] = 0.0f;
        dot_rows<F, U>(w, col, a.x, a.ldx, a.x_rows, r0, rows, a.k, acc);
        if constexpr (Glu)
            dot_rows<F, U>(a.table ? a.table[g * a.table_stride + a.table_first + 1] : a.single_up,
                        col, a.x, a.ldx, a.x_rows, r0, rows, a.k, acc_up);
#pragma unroll
        for (int m = 0; m < kMaxRows; ++m) {
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

template <QFormat F>
void launch_skinny(const SkinnyArgs& a, cudaStream_t s) {
    const int64_t passes = (a.max_rows + kMaxRows - 1) / kMaxRows;
    dim3 grid(static_cast<unsigned>((a.n + kWarpsPerBlock - 1) / kWarpsPerBlock),
              static_cast<unsigned>(a.groups),
              static_cast<unsigned>(passes < 1 ? 1 : (passes > 64 ? 64 : passes)));
    static const bool first_version = [] {
        const char* e = std::getenv("MYRIAD_CUDA_SKINNY_UNROLL");
        return e && std::strcmp(e, "1") == 0;
    }();
    constexpr int kThreads = kWarp * kWarpsPerBlock;
    if (first_version) {
        if (a.glu)
            skinny_kernel<F, true, 1><<<grid, kThreads, 0, s>>>(a);
        else
            skinny_kernel<F, false, 1><<<grid, kThreads, 0, s>>>(a);
    } else if (a.glu) {
        skinny_kernel<F, true, kUnroll<F>><<<grid, kThreads, 0, s>>>(a);
    } else {
        skinny_kernel<F, false, kUnroll<F>><<<grid, kThreads, 0, s>>>(a);
    }
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
