// Reading quantised weights in the kernels: eight consecutive elements of a row in their stored
// form (Raw8), and their expansion to floats, for every QFormat.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"

namespace myriad::cuda {

// The stored form of eight consecutive elements of a row and their scale: loaded first, so a
// lane can have several in flight in few registers, and expanded to floats only when used.
template <QFormat F>
struct Raw8;
template <>
struct Raw8<QFormat::Bf16> {
    uint4 q;
};
template <>
struct Raw8<QFormat::Fp8Block> {
    uint2 q;
    float s;
};
template <>
struct Raw8<QFormat::Nvfp4> {
    uint32_t q;
    uint32_t s;  // the e4m3 scale byte
};
template <>
struct Raw8<QFormat::Int4> {
    uint32_t q;
    float s;
};

// Elements c..c+7 of row r of `w` (c a multiple of 8), as stored.
template <QFormat F>
__device__ __forceinline__ Raw8<F> load_raw(const QMatrix& w, int64_t r, int64_t c) {
    const uint8_t* row = w.codes + r * w.row_bytes;
    Raw8<F> raw;
    if constexpr (F == QFormat::Bf16) {
        raw.q = *reinterpret_cast<const uint4*>(row + c * 2);
    } else if constexpr (F == QFormat::Fp8Block) {
        raw.q = *reinterpret_cast<const uint2*>(row + c);
        raw.s = static_cast<const float*>(
            w.scales)[((r + w.row_phase) / w.block_rows) * w.scale_stride +
                      (c + w.col_phase) / w.block_cols];
    } else if constexpr (F == QFormat::Nvfp4) {
        raw.q = *reinterpret_cast<const uint32_t*>(row + c / 2);
        raw.s = static_cast<const uint8_t*>(
            w.scales)[r * w.scale_stride + (c + w.col_phase) / w.block_cols];
    } else {
        raw.q = *reinterpret_cast<const uint32_t*>(row + c / 2);
        raw.s = static_cast<const float*>(
            w.scales)[r * w.scale_stride + (c + w.col_phase) / w.block_cols];
    }
    return raw;
}

// The eight elements without their scale, and the factor that scales them: the element is
// v[i] * factor, exactly (expand multiplies them). Few instructions per element, since decode
// kernels spend more of their time here than waiting for the bytes:
// - NVFP4: an E2M1 code (sign, 2 exponent bits, 1 mantissa bit, bias 1) placed in the low bits
//   of an FP16 exponent and mantissa is the value times 2^-14, normal or not; two codes are
//   placed at once as a half2 and widened, and 2^14 goes into the factor;
// - FP8 (and the NVFP4 scale): the hardware's e4m3x2 to f16x2 conversion (exact);
// - INT4: the code under the mantissa of 2^23, minus 2^23 + 8.
template <QFormat F>
__device__ __forceinline__ float expand_unscaled(const Raw8<F>& raw, float global_scale,
                                                 float v[8]) {
    if constexpr (F == QFormat::Bf16) {
        const uint32_t words[4] = {raw.q.x, raw.q.y, raw.q.z, raw.q.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = __uint_as_float(words[i] << 16);
            v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
        }
        return 1.0f;
    } else if constexpr (F == QFormat::Fp8Block) {
        const uint32_t words[2] = {raw.q.x, raw.q.y};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
                static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2))), __NV_E4M3);
            const float2 f = __half22float2(__half2(h));
            v[2 * i] = f.x;
            v[2 * i + 1] = f.y;
        }
        return raw.s;
    } else if constexpr (F == QFormat::Nvfp4) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // codes i and i + 4 (bits 4i and 16 + 4i), low first
            const uint32_t t = raw.q >> (4 * i);
            const uint32_t bits = ((t & 0x00070007u) << 9) | ((t & 0x00080008u) << 12);
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&bits));
            v[i] = f.x;
            v[i + 4] = f.y;
        }
        const __half_raw sh =
            __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(raw.s), __NV_E4M3);
        return __half2float(__half(sh)) * global_scale * 16384.0f;
    } else {  // Int4: q + 8, eight per little-endian int32, element 8j + i at bits 4i
#pragma unroll
        for (int i = 0; i < 8; ++i)
            v[i] = __uint_as_float(0x4b000000u | ((raw.q >> (4 * i)) & 15u)) - 8388616.0f;
        return raw.s;
    }
}

template <QFormat F>
__device__ __forceinline__ void expand(const Raw8<F>& raw, float global_scale, float v[8]) {
    const float factor = expand_unscaled<F>(raw, global_scale, v);
    if constexpr (F != QFormat::Bf16) {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] *= factor;
    }
}

// Elements c..c+7 of row r of `w` as floats (c a multiple of 8).
template <QFormat F>
__device__ __forceinline__ void load8(const QMatrix& w, int64_t r, int64_t c, float v[8]) {
    expand<F>(load_raw<F>(w, r, c), w.global_scale, v);
}

}  // namespace myriad::cuda
