// Reading quantised weights in the kernels: eight consecutive elements of a row in their stored
// form (Raw8), and their expansion to floats, for every QFormat.
#pragma once

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

template <QFormat F>
__device__ __forceinline__ void expand(const Raw8<F>& raw, float global_scale, float v[8]) {
    if constexpr (F == QFormat::Bf16) {
        const uint32_t words[4] = {raw.q.x, raw.q.y, raw.q.z, raw.q.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = __uint_as_float(words[i] << 16);
            v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
        }
    } else if constexpr (F == QFormat::Fp8Block) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[i] = e4m3_to_f32((raw.q.x >> (8 * i)) & 0xffu) * raw.s;
            v[4 + i] = e4m3_to_f32((raw.q.y >> (8 * i)) & 0xffu) * raw.s;
        }
    } else if constexpr (F == QFormat::Nvfp4) {
        const float s = e4m3_to_f32(raw.s) * global_scale;
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = e2m1_to_f32((raw.q >> (4 * i)) & 15u) * s;  // low first
    } else {  // Int4: q + 8, eight per little-endian int32, element 8j + i at bits 4i
#pragma unroll
        for (int i = 0; i < 8; ++i)
            v[i] = static_cast<float>(static_cast<int>((raw.q >> (4 * i)) & 15u) - 8) * raw.s;
    }
}

// Elements c..c+7 of row r of `w` as floats (c a multiple of 8).
template <QFormat F>
__device__ __forceinline__ void load8(const QMatrix& w, int64_t r, int64_t c, float v[8]) {
    expand<F>(load_raw<F>(w, r, c), w.global_scale, v);
}

}  // namespace myriad::cuda
