// Element types of tensors, their sizes and names, and scalar conversions to and from float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace myriad {

enum class DType : uint8_t {
    F32,
    F16,
    BF16,
    F8_E4M3,
    U8,
    I8,
    I32,
    I64,
    F64,
    BOOL,
    I16,
    U16,
    U32,
    U64
};

// Bytes per element.
size_t dtype_size(DType dt);
// The safetensors name ("BF16", "F8_E4M3", ...).
std::string_view dtype_name(DType dt);
// Parses a safetensors dtype name; nullopt for names myriad does not read.
std::optional<DType> dtype_from_name(std::string_view name);

inline float bf16_to_f32(uint16_t v) {
    uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t v);
uint16_t f32_to_f16(float f);
// float8_e4m3fn: no infinities, 0x7f/0xff are NaN, max 448.
float f8e4m3_to_f32(uint8_t v);
// float -> float8_e4m3fn, round to nearest even, saturating to ±448 (as vLLM's FP8 casts); NaN
// gives 0x7f.
uint8_t f32_to_f8e4m3(float f);

// Converts `n` elements of `src` (of type `dt`, one of F32, F16, BF16, F8_E4M3) to float.
void convert_to_f32(DType dt, const void* src, float* dst, size_t n);

}  // namespace myriad
