// Device helpers shared by the kernels: reductions, number formats, grid sizes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace myriad::cuda {

constexpr int kWarp = 32;

// Kernel attributes (shared memory opt-ins) hold per device: the host's "already set" flags are
// kept per device, indexed by this (several ranks of one process may run on several GPUs).
constexpr int kMaxDevices = 64;
inline int device_slot() {
    int d = 0;
    cudaGetDevice(&d);
    return d >= 0 && d < kMaxDevices ? d : 0;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float part[32];
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    v = warp_sum(v);
    __syncthreads();  // `part` may still be read by a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    const int warps = blockDim.x / kWarp;
    float total = lane < warps ? part[lane] : 0.0f;
    return warp_sum(total);
}

// Asynchronous copies from global to shared memory (sm_80+): 16 bytes (both addresses 16-byte
// aligned, bypassing L1) or 4; a group of them is committed, then waited on with at most N
// groups still in flight.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t v) {
    return __uint_as_float(static_cast<uint32_t>(v) << 16);
}

// Round to nearest even, NaN kept (as util/dtype.h's f32_to_bf16).
__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f) {
    uint32_t bits = __float_as_uint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// float8_e4m3fn to float: bias 7, subnormals below 2^-6, 0x7f/0xff NaN.
__device__ __forceinline__ float e4m3_to_f32(uint32_t v) {
    const uint32_t e = (v >> 3) & 15u, m = v & 7u;
    float f;
    if ((v & 0x7fu) == 0x7fu)
        f = __uint_as_float(0x7fc00000u);
    else if (e == 0)
        f = static_cast<float>(m) * 0.001953125f;  // m * 2^-9
    else
        f = __uint_as_float(((e + 120u) << 23) | (m << 20));
    return (v & 0x80u) ? -f : f;
}

// float to float8_e4m3fn, round to nearest even, saturating to ±448 (as util/dtype.h).
__device__ __forceinline__ uint8_t f32_to_e4m3(float f) {
    const uint32_t bits = __float_as_uint(f);
    const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
    if (f != f) return 0x7f;
    float a = fminf(fabsf(f), 448.0f);
    if (a < 0.015625f) {  // subnormal range: multiples of 2^-9
        const float q = rintf(a * 512.0f);
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));  // q == 8 is 2^-6 exactly
    }
    uint32_t u = __float_as_uint(a);
    // Keep 3 mantissa bits with round to nearest even.
    u = u + 0x7ffffu + ((u >> 20) & 1u);
    const uint32_t e = (u >> 23) - 120u, m = (u >> 20) & 7u;
    uint32_t code = (e << 3) | m;
    if (code > 0x7eu) code = 0x7eu;
    return static_cast<uint8_t>(sign | code);
}

// The e2m1 value of a 4-bit code: bit 3 sign, bits 0-2 index [0, 0.5, 1, 1.5, 2, 3, 4, 6].
__device__ __forceinline__ float e2m1_to_f32(uint32_t code) {
    const uint32_t m = code & 7u;
    const float mag = m < 4u ? 0.5f * static_cast<float>(m)
                             : (m < 6u ? static_cast<float>(m) - 2.0f : (m == 6u ? 4.0f : 6.0f));
    return (code & 8u) ? -mag : mag;
}

inline unsigned grid_for(int64_t n, int threads) {
    return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace myriad::cuda
