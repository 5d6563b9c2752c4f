// Synthetic weight values (bench-model --random): pure functions of (seed, index), written so
// that host code and CUDA kernels produce the same bits. Dense values are center + amplitude * u
// with u a multiple of 2^-15 in [-1, 1) and amplitude a power of two, so the product is exact
// and only the final add rounds (fused or not, host and device agree); then rounded to BF16.
// Quantised codes are drawn from ranges that hold no NaN:
//   FP8 codes: sign, exponent field 4..8, any mantissa (|value| in [1/8, 3.75]); F32 block
//     scales amplitude * (1 + k/256).
//   NVFP4 codes: any byte (every e2m1 nibble is a number); e4m3 scales 0x30..0x37 (0.5..0.94).
//   INT4 codes: any byte (nibbles q + 8, q in [-8, 7]); BF16 group scales amplitude * (1 + k/128),
//     exact in BF16.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MYRIAD_HD __host__ __device__ __forceinline__
#else
#define MYRIAD_HD inline
#endif

namespace myriad::synth {

MYRIAD_HD uint64_t mix(uint64_t seed, uint64_t index) {
    uint64_t z = seed + index * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Round-to-nearest-even F32 -> BF16 (no NaN reaches here).
MYRIAD_HD uint16_t to_bf16(float f) {
    uint32_t u;
#if defined(__CUDA_ARCH__)
    u = __float_as_uint(f);
#else
    __builtin_memcpy(&u, &f, 4);
#endif
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

MYRIAD_HD float from_bf16(uint16_t v) {
    const uint32_t u = static_cast<uint32_t>(v) << 16;
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
#endif
}

MYRIAD_HD uint16_t dense_bf16(uint64_t seed, uint64_t i, float center, float amplitude) {
    const int32_t k = static_cast<int32_t>(mix(seed, i) >> 48) - 32768;
    const float x = static_cast<float>(k) * (amplitude * (1.0f / 32768.0f));  // exact
    return to_bf16(center + x);
}

MYRIAD_HD uint8_t fp8_code(uint64_t seed, uint64_t i) {
    const uint64_t h = mix(seed, i);
    const uint32_t exponent = 4 + static_cast<uint32_t>((h >> 8) % 5);
    return static_cast<uint8_t>((h & 0x80u) | (exponent << 3) | ((h >> 16) & 7u));
}

MYRIAD_HD float fp8_scale(uint64_t seed, uint64_t i, float amplitude) {
    const uint32_t k = static_cast<uint32_t>(mix(seed ^ 0x5CA1E5ull, i) >> 56);
    return amplitude * (1.0f + static_cast<float>(k) * (1.0f / 256.0f));  // exact
}

MYRIAD_HD uint8_t nvfp4_byte(uint64_t seed, uint64_t i) {
    return static_cast<uint8_t>(mix(seed, i) >> 24);
}

MYRIAD_HD uint8_t nvfp4_scale(uint64_t seed, uint64_t i) {
    return static_cast<uint8_t>(0x30u | ((mix(seed ^ 0x5CA1E5ull, i) >> 40) & 7u));
}

MYRIAD_HD uint16_t int4_scale_bf16(uint64_t seed, uint64_t i, float amplitude) {
    const uint32_t k = static_cast<uint32_t>(mix(seed ^ 0x5CA1E5ull, i) >> 57);
    return to_bf16(amplitude * (1.0f + static_cast<float>(k) * (1.0f / 128.0f)));
}

// Root mean square of a code times its block scale, per unit of amplitude (the loader divides
// the wanted RMS by these): FP8 codes ≈ 1.45 × 1.5; NVFP4 nibbles ≈ 2.93 × scales ≈ 0.72.
constexpr float kFp8Rms = 2.2f;
constexpr float kNvfp4Rms = 2.1f;
// INT4: sqrt(mean q^2) over q in [-8, 7] = 4.64, times scales ≈ 1.5.
constexpr float kInt4Rms = 7.0f;

}  // namespace myriad::synth

#undef MYRIAD_HD
