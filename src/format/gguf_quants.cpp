#include "format/gguf_quants.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "util/dtype.h"
#include "util/error.h"

namespace myriad {

namespace {

constexpr int64_t kQK = 256;  // elements per k-quant super-block

uint16_t u16_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

float f16_at(const uint8_t* p) {
    return f16_to_f32(u16_at(p));
}

// Block: f16 d, 32 x int8.
void q8_0_block(const uint8_t* b, float* y) {
    const float d = f16_at(b);
    const auto* q = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d;
}

// Block: f16 d, 16 bytes; element j is the low nibble of byte j, element j + 16 its high nibble.
void q4_0_block(const uint8_t* b, float* y) {
    const float d = f16_at(b);
    const uint8_t* q = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((q[j] & 0x0f) - 8) * d;
        y[j + 16] = static_cast<float>((q[j] >> 4) - 8) * d;
    }
}

// The 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K.
void scale_min_k4(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// Block (144 bytes): f16 d, f16 dmin, 12 bytes of scales/mins, 128 bytes of nibbles. Each 64
// elements share 32 bytes: low nibbles first, then high nibbles, each half with its own scale.
void q4_k_block(const uint8_t* b, float* y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    for (int j = 0, is = 0; j < kQK; j += 64, is += 2, q += 32) {
        uint8_t sc, m;
        scale_min_k4(is, scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            const float prod = d1 * static_cast<float>(q[l] & 0x0f);
            *y++ = prod - m1;
        }
        for (int l = 0; l < 32; ++l) {
            const float prod = d2 * static_cast<float>(q[l] >> 4);
            *y++ = prod - m2;
        }
    }
}

// Block (176 bytes): f16 d, f16 dmin, 12 bytes of scales/mins, 32 bytes of fifth bits, 128
// bytes of nibbles; as Q4_K with bit (2i or 2i+1) of qh[l] adding 16.
void q5_k_block(const uint8_t* b, float* y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + 48;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQK; j += 64, is += 2, ql += 32) {
        uint8_t sc, m;
        scale_min_k4(is, scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            const int v = (ql[l] & 0x0f) + ((qh[l] & u1) ? 16 : 0);
            const float prod = d1 * static_cast<float>(v);
            *y++ = prod - m1;
        }
        for (int l = 0; l < 32; ++l) {
            const int v = (ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0);
            const float prod = d2 * static_cast<float>(v);
            *y++ = prod - m2;
        }
        u1 = static_cast<uint8_t>(u1 << 2);
        u2 = static_cast<uint8_t>(u2 << 2);
    }
}

// Block (210 bytes): 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 int8 scales, f16 d.
void q6_k_block(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = f16_at(b + 208);
    for (int n = 0; n < kQK; n += 128, ql += 64, qh += 32, sc += 8, y += 128) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            const float s1 = d * static_cast<float>(sc[is + 0]);
            const float s2 = d * static_cast<float>(sc[is + 2]);
            const float s3 = d * static_cast<float>(sc[is + 4]);
            const float s4 = d * static_cast<float>(sc[is + 6]);
            y[l] = s1 * static_cast<float>(q1);
            y[l + 32] = s2 * static_cast<float>(q2);
            y[l + 64] = s3 * static_cast<float>(q3);
            y[l + 96] = s4 * static_cast<float>(q4);
        }
    }
}

}  // namespace

std::string gguf_type_name(uint32_t id) {
    // ggml's type table (ggml.h); ids 4, 5 and 31-33, 36-38 are retired or unused.
    static const char* const kNames[] = {
        "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
        "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
        "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
        "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
        "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
        "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",    "NVFP4"};
    if (id < std::size(kNames)) return kNames[id];
    return fmt::format("type {}", id);
}

std::optional<GgufType> gguf_supported_type(uint32_t id) {
    switch (static_cast<GgufType>(id)) {
        case GgufType::F32:
        case GgufType::F16:
        case GgufType::Q4_0:
        case GgufType::Q8_0:
        case GgufType::Q4_K:
        case GgufType::Q5_K:
        case GgufType::Q6_K:
        case GgufType::BF16:
            return static_cast<GgufType>(id);
    }
    return std::nullopt;
}

int64_t gguf_block_elems(GgufType t) {
    switch (t) {
        case GgufType::F32:
        case GgufType::F16:
        case GgufType::BF16:
            return 1;
        case GgufType::Q4_0:
        case GgufType::Q8_0:
            return 32;
        case GgufType::Q4_K:
        case GgufType::Q5_K:
        case GgufType::Q6_K:
            return kQK;
    }
    return 1;
}

size_t gguf_block_bytes(GgufType t) {
    switch (t) {
        case GgufType::F32:
            return 4;
        case GgufType::F16:
        case GgufType::BF16:
            return 2;
        case GgufType::Q4_0:
            return 18;
        case GgufType::Q8_0:
            return 34;
        case GgufType::Q4_K:
            return 144;
        case GgufType::Q5_K:
            return 176;
        case GgufType::Q6_K:
            return 210;
    }
    return 1;
}

bool gguf_is_quantized(GgufType t) {
    return gguf_block_elems(t) > 1;
}

void gguf_dequantize_blocks(GgufType t, const uint8_t* src, int64_t nblocks, float* dst) {
    const size_t bb = gguf_block_bytes(t);
    const int64_t be = gguf_block_elems(t);
    switch (t) {
        case GgufType::F32:
            std::memcpy(dst, src, static_cast<size_t>(nblocks) * 4);
            return;
        case GgufType::F16:
            convert_to_f32(DType::F16, src, dst, static_cast<size_t>(nblocks));
            return;
        case GgufType::BF16:
            convert_to_f32(DType::BF16, src, dst, static_cast<size_t>(nblocks));
            return;
        default:
            break;
    }
    void (*block)(const uint8_t*, float*) = nullptr;
    switch (t) {
        case GgufType::Q4_0:
            block = q4_0_block;
            break;
        case GgufType::Q8_0:
            block = q8_0_block;
            break;
        case GgufType::Q4_K:
            block = q4_k_block;
            break;
        case GgufType::Q5_K:
            block = q5_k_block;
            break;
        case GgufType::Q6_K:
            block = q6_k_block;
            break;
        default:
            internal_error("gguf_dequantize_blocks: type {}", gguf_type_name(t));
    }
    for (int64_t i = 0; i < nblocks; ++i) block(src + i * bb, dst + i * be);
}

void gguf_dequantize_range(GgufType t, const uint8_t* row, int64_t c0, int64_t n, float* dst) {
    const int64_t be = gguf_block_elems(t);
    const size_t bb = gguf_block_bytes(t);
    int64_t c = c0;
    const int64_t end = c0 + n;
    // Whole blocks straight into dst; partial ones through a block of scratch.
    std::array<float, kQK> tmp;
    while (c < end) {
        const int64_t blk = c / be, off = c - blk * be;
        if (off == 0 && end - c >= be) {
            const int64_t whole = (end - c) / be;
            gguf_dequantize_blocks(t, row + blk * bb, whole, dst + (c - c0));
            c += whole * be;
            continue;
        }
        gguf_dequantize_blocks(t, row + blk * bb, 1, tmp.data());
        const int64_t take = std::min(be - off, end - c);
        std::memcpy(dst + (c - c0), tmp.data() + off, static_cast<size_t>(take) * 4);
        c += take;
    }
}

}  // namespace myriad
