// Deterministic random tensor contents for synthetic checkpoints: every byte is a function of
// (seed, tensor name, element index) alone, so any chunking over any number of threads writes the
// same file. Values are scaled like a trained model's so that a forward pass stays finite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace myriad::tools {

enum class FillKind : uint8_t {
    Bf16Uniform,  // BF16 uniform with standard deviation `a` around `b`
    F32Uniform,   // F32 uniform in [a, b)
    F32Constant,  // F32, every element `a`
    Nvfp4Codes,   // U8: two random e2m1 codes per byte (every code is a number: e2m1 has no NaN)
    Fp8Scales,    // F8_E4M3 block scales, uniform over the codes of kFp8ScaleCodes (never NaN)
};

struct Fill {
    FillKind kind = FillKind::Bf16Uniform;
    float a = 0, b = 0;
};

// The F8_E4M3 codes block scales are drawn from: 0x70 .. 0x7E, the values 128 .. 448 (0x7F is
// NaN and is never written).
inline constexpr uint8_t kFp8ScaleFirst = 0x70, kFp8ScaleLast = 0x7E;

// E4M3 (fn) code to float, for the normal codes used here.
float fp8_e4m3_value(uint8_t code);
// Root mean square of the block-scale values drawn (uniform over the codes above).
double fp8_scale_rms();
// Root mean square of an e2m1 value under uniform random codes: sqrt(mean of the squares of
// 0, 0.5, 1, 1.5, 2, 3, 4, 6) = 2.926.
double e2m1_uniform_rms();

// A 64-bit key for one tensor of one checkpoint.
uint64_t tensor_key(uint64_t seed, std::string_view name);

// Writes bytes [offset, offset + n) of the tensor with this key and fill. `offset` and `n` are
// multiples of the element size.
void fill_bytes(const Fill& fill, uint64_t key, uint64_t offset, uint8_t* out, size_t n);

}  // namespace myriad::tools
