#include "tensor_fill.h"

#include <cmath>
#include <cstring>

#include "util/dtype.h"
#include "util/error.h"

namespace myriad::tools {

namespace {

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [-1, 1) from 24 random bits.
inline float unit(uint64_t r) {
    return static_cast<float>(static_cast<int32_t>(r >> 40) - (1 << 23)) * (1.0f / (1 << 23));
}

}  // namespace

float fp8_e4m3_value(uint8_t code) {
    const int exp = (code >> 3) & 0xF, man = code & 7;
    const float mag = exp == 0 ? std::ldexp(static_cast<float>(man) / 8.0f, -6)
                               : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
    return (code & 0x80) ? -mag : mag;
}

double fp8_scale_rms() {
    double sum = 0;
    int n = 0;
    for (int c = kFp8ScaleFirst; c <= kFp8ScaleLast; ++c, ++n) {
        const double v = fp8_e4m3_value(static_cast<uint8_t>(c));
        sum += v * v;
    }
    return std::sqrt(sum / n);
}

double e2m1_uniform_rms() {
    const double mags[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    double sum = 0;
    for (double m : mags) sum += m * m;
    return std::sqrt(sum / 8);
}

uint64_t tensor_key(uint64_t seed, std::string_view name) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
    return splitmix64(h ^ splitmix64(seed));
}

void fill_bytes(const Fill& fill, uint64_t key, uint64_t offset, uint8_t* out, size_t n) {
    switch (fill.kind) {
        case FillKind::Bf16Uniform: {
            MYRIAD_CHECK(offset % 2 == 0 && n % 2 == 0, "BF16 fill at odd byte {}", offset);
            const float half_width = fill.a * std::sqrt(3.0f);  // uniform: std = w / sqrt(3)
            const uint64_t first = offset / 2;
            for (size_t i = 0; i < n / 2; ++i) {
                const float v = fill.b + half_width * unit(splitmix64(key + first + i));
                const uint16_t b = f32_to_bf16(v);
                std::memcpy(out + 2 * i, &b, 2);
            }
            return;
        }
        case FillKind::F32Uniform:
        case FillKind::F32Constant: {
            MYRIAD_CHECK(offset % 4 == 0 && n % 4 == 0, "F32 fill at byte {}", offset);
            const uint64_t first = offset / 4;
            for (size_t i = 0; i < n / 4; ++i) {
                float v = fill.a;
                if (fill.kind == FillKind::F32Uniform)
                    v = fill.a +
                        (fill.b - fill.a) * 0.5f * (1.0f + unit(splitmix64(key + first + i)));
                std::memcpy(out + 4 * i, &v, 4);
            }
            return;
        }
        case FillKind::Nvfp4Codes: {
            // Byte j is byte j % 8 (little-endian) of word j / 8; a chunk may start or end inside
            // a word, whole words in between are copied at once.
            size_t i = 0;
            for (; i < n && (offset + i) % 8 != 0; ++i)
                out[i] = static_cast<uint8_t>(splitmix64(key + (offset + i) / 8) >>
                                              (8 * ((offset + i) % 8)));
            for (; i + 8 <= n; i += 8) {
                const uint64_t r = splitmix64(key + (offset + i) / 8);
                for (int b = 0; b < 8; ++b) out[i + b] = static_cast<uint8_t>(r >> (8 * b));
            }
            for (; i < n; ++i)
                out[i] = static_cast<uint8_t>(splitmix64(key + (offset + i) / 8) >>
                                              (8 * ((offset + i) % 8)));
            return;
        }
        case FillKind::Fp8Scales: {
            constexpr int span = kFp8ScaleLast - kFp8ScaleFirst + 1;
            for (size_t i = 0; i < n;) {
                const uint64_t at = offset + i;
                const uint64_t r = splitmix64(key + at / 8);
                for (uint64_t b = at % 8; b < 8 && i < n; ++b, ++i)
                    out[i] = static_cast<uint8_t>(kFp8ScaleFirst +
                                                  ((((r >> (8 * b)) & 0xFF) * span) >> 8));
            }
            return;
        }
    }
}

}  // namespace myriad::tools
