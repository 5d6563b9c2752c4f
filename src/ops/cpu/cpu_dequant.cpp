#include "ops/cpu/cpu_dequant.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "format/gguf_quants.h"
#include "util/error.h"

namespace myriad {

namespace {

constexpr std::array<float, 16> kE2m1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// All 256 float8_e4m3fn values, so the inner loops are table lookups.
const std::array<float, 256>& e4m3_table() {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int i = 0; i < 256; ++i) t[i] = f8e4m3_to_f32(static_cast<uint8_t>(i));
        return t;
    }();
    return table;
}

void fp8_block_row(const QuantizedData& q, int64_t row, int64_t c0, int64_t n, float* out) {
    const auto& lut = e4m3_table();
    const uint8_t* codes = q.codes + row * q.code_row_bytes;
    const int64_t srow = row / q.block_rows;
    for (int64_t c = c0, end = c0 + n; c < end;) {
        const int64_t block = c / q.block_cols;
        const int64_t stop = std::min(end, (block + 1) * q.block_cols);
        const float s = quant_scale(q, srow, block);
        for (; c < stop; ++c) out[c - c0] = lut[codes[c]] * s;
    }
}

void nvfp4_row(const QuantizedData& q, int64_t row, int64_t c0, int64_t n, float* out) {
    const uint8_t* codes = q.codes + row * q.code_row_bytes;
    for (int64_t c = c0, end = c0 + n; c < end;) {
        const int64_t block = c / q.block_cols;
        const int64_t stop = std::min(end, (block + 1) * q.block_cols);
        const float s = quant_scale(q, row, block);
        for (; c < stop; ++c) {
            const uint8_t byte = codes[c / 2];
            const uint8_t code = (c & 1) ? (byte >> 4) : (byte & 0x0f);  // element 2j: low nibble
            out[c - c0] = kE2m1[code] * s * q.global_scale;
        }
    }
}

void int4_row(const QuantizedData& q, int64_t row, int64_t c0, int64_t n, float* out) {
    const uint8_t* codes = q.codes + row * q.code_row_bytes;
    for (int64_t c = c0, end = c0 + n; c < end;) {
        const int64_t group = c / q.block_cols;
        const int64_t stop = std::min(end, (group + 1) * q.block_cols);
        const float s = quant_scale(q, row, group);
        for (; c < stop; ++c) {
            uint32_t word;  // element 8j + i: bits 4i..4i+3 of int32 j (little-endian)
            std::memcpy(&word, codes + (c / 8) * 4, 4);
            const int nibble = static_cast<int>((word >> (4 * (c % 8))) & 0x0fu);
            out[c - c0] = static_cast<float>(nibble - 8) * s;
        }
    }
}

// ggml blocks along the row: the scales live inside each block (format/gguf_quants.h).
void gguf_row(const QuantizedData& q, int64_t row, int64_t c0, int64_t n, float* out) {
    gguf_dequantize_range(static_cast<GgufType>(q.gguf_type), q.codes + row * q.code_row_bytes, c0,
                          n, out);
}

}  // namespace

float e2m1_to_f32(uint8_t code) {
    return kE2m1[code & 0x0f];
}

void dequantize_rows(const Weight& w, int64_t r0, int64_t r1, float* out) {
    const QuantizedData& q = w.quant;
    MYRIAD_CHECK(r0 >= 0 && r0 <= r1 && r1 <= w.rows, "dequantize rows [{}, {}) of {}", r0, r1,
                 w.rows);
    auto row_fn = [&]() -> void (*)(const QuantizedData&, int64_t, int64_t, int64_t, float*) {
        switch (w.format) {
            case WeightFormat::Fp8Block:
                return fp8_block_row;
            case WeightFormat::Nvfp4:
                return nvfp4_row;
            case WeightFormat::Int4Group:
                return int4_row;
            case WeightFormat::GgufBlock:
                return gguf_row;
            case WeightFormat::Dense:
                break;
        }
        internal_error("dequantize_rows on a {} weight", weight_format_name(w.format));
    }();
    for (int64_t r = r0; r < r1; ++r)
        row_fn(q, q.row_offset + r, q.col_offset, w.cols, out + (r - r0) * w.cols);
}

}  // namespace myriad
