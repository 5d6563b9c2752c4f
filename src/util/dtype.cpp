#include "util/dtype.h"

#include <algorithm>

#include "util/error.h"

namespace myriad {

namespace {
struct DTypeInfo {
    DType dt;
    std::string_view name;
    size_t size;
};
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "F32", 4},         {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::U8, "U8", 1},   {DType::I8, "I8", 1},
    {DType::I32, "I32", 4},         {DType::I64, "I64", 8}, {DType::F64, "F64", 8},
    {DType::BOOL, "BOOL", 1},       {DType::I16, "I16", 2}, {DType::U16, "U16", 2},
    {DType::U32, "U32", 4},         {DType::U64, "U64", 8},
};
}  // namespace

size_t dtype_size(DType dt) {
    for (const auto& i : kInfos)
        if (i.dt == dt) return i.size;
    return 0;
}

std::string_view dtype_name(DType dt) {
    for (const auto& i : kInfos)
        if (i.dt == dt) return i.name;
    return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const auto& i : kInfos)
        if (i.name == name) return i.dt;
    return std::nullopt;
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (absx < 0x38800000u) {  // subnormal or zero in f16
        float a;
        std::memcpy(&a, &absx, 4);
        // 2^-24 is the f16 subnormal unit; nearbyint rounds half to even.
        auto m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t mant = absx & 0x7fffffu;
    uint32_t exp = (absx >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

float f8e4m3_to_f32(uint8_t v) {
    uint32_t sign = v >> 7;
    uint32_t exp = (v >> 3) & 0xfu;
    uint32_t mant = v & 0x7u;
    float out;
    if (exp == 0xf && mant == 0x7) {
        out = NAN;
    } else if (exp == 0) {
        out = std::ldexp(static_cast<float>(mant), -9);  // subnormal: mant/8 * 2^-6
    } else {
        out = std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, static_cast<int>(exp) - 7);
    }
    return sign ? -out : out;
}

uint8_t f32_to_f8e4m3(float f) {
    if (std::isnan(f)) return 0x7f;
    const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
    const float a = std::fabs(f);
    if (a >= 448.0f) return sign | 0x7e;
    if (a < 0.015625f) {  // below 2^-6: subnormal, steps of 2^-9 (8 steps reach the min normal)
        return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
    }
    int e = 0;
    const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    int exp = e - 1 + 7;
    int mant = static_cast<int>(std::nearbyint((2.0f * m - 1.0f) * 8.0f));  // half to even
    if (mant == 8) {
        mant = 0;
        ++exp;
    }
    const int code = (exp << 3) | mant;
    return sign | static_cast<uint8_t>(std::min(code, 0x7e));
}

void convert_to_f32(DType dt, const void* src, float* dst, size_t n) {
    switch (dt) {
        case DType::F32:
            std::memcpy(dst, src, n * 4);
            return;
        case DType::BF16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
            return;
        }
        case DType::F16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
            return;
        }
        case DType::F8_E4M3: {
            const auto* s = static_cast<const uint8_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = f8e4m3_to_f32(s[i]);
            return;
        }
        default:
            internal_error("convert_to_f32: dtype {} is not a float type", dtype_name(dt));
    }
}

}  // namespace myriad
