// The CPU dequantisers of the quantised weight formats against hand-computed values: e4m3 and
// e2m1 tables, nibble order, block edges, shard offsets in global coordinates; and the tiled
// quantised linear against a dense product of the dequantised weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cpu/cpu_dequant.h"
#include "ops/cpu/cpu_ops.h"

namespace myriad {
namespace {

TEST(Fp8E4m3, DecodesNormalsSubnormalsAndNan) {
    EXPECT_EQ(f8e4m3_to_f32(0x38), 1.0f);
    EXPECT_EQ(f8e4m3_to_f32(0xB8), -1.0f);
    EXPECT_EQ(f8e4m3_to_f32(0x39), 1.125f);
    EXPECT_EQ(f8e4m3_to_f32(0x7E), 448.0f);
    EXPECT_EQ(f8e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
    EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
    EXPECT_EQ(f8e4m3_to_f32(0x07), 7.0f * std::ldexp(1.0f, -9));
    EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7F)));
    EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0xFF)));
}

TEST(Fp8E4m3, EncodesToNearestEvenAndSaturates) {
    for (int c = 0; c < 256; ++c) {
        if ((c & 0x7F) == 0x7F) continue;  // NaN
        const float v = f8e4m3_to_f32(static_cast<uint8_t>(c));
        if (c == 0x80) continue;  // -0 encodes as 0x80 too, checked below
        EXPECT_EQ(f32_to_f8e4m3(v), c) << "code " << c;
    }
    EXPECT_EQ(f32_to_f8e4m3(-0.0f), 0x80);
    EXPECT_EQ(f32_to_f8e4m3(1.0f + 1.0f / 16), 0x38);       // tie between 1 and 1.125: even
    EXPECT_EQ(f32_to_f8e4m3(1.0f + 3.0f / 16), 0x3A);       // tie between 1.125 and 1.25: even
    EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal
    EXPECT_EQ(f32_to_f8e4m3(3.0f * std::ldexp(1.0f, -10)), 0x02);
    EXPECT_EQ(f32_to_f8e4m3(1000.0f), 0x7E);
    EXPECT_EQ(f32_to_f8e4m3(-1000.0f), 0xFE);
    EXPECT_EQ(f32_to_f8e4m3(NAN), 0x7F);
}

TEST(Nvfp4, E2m1Table) {
    const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    for (int c = 0; c < 16; ++c) EXPECT_EQ(e2m1_to_f32(static_cast<uint8_t>(c)), want[c]) << c;
    EXPECT_TRUE(std::signbit(e2m1_to_f32(8)));
}

// A full [rows, cols] quantised tensor and the shard [r0, +nr) x [c0, +nc) of it.
Weight shard_of(WeightFormat f, const QuantizedData& q, int64_t r0, int64_t nr, int64_t c0,
                int64_t nc) {
    Weight w;
    w.format = f;
    w.rows = nr;
    w.cols = nc;
    w.quant = q;
    w.quant.row_offset = r0;
    w.quant.col_offset = c0;
    return w;
}

TEST(Nvfp4, LowNibbleFirstBlockScalesAndGlobalScale) {
    // 2 rows x 32 inputs: 16 bytes of codes per row, 2 block scales per row.
    std::vector<uint8_t> codes(2 * 16, 0), scales = {0x40, 0x30, 0x38, 0x48};  // 2, 0.5, 1, 4
    codes[0] = 0x92;        // element 0: code 2 (1.0); element 1: code 9 (-0.5)
    codes[8] = 0x7F;        // elements 16, 17: code 15 (-6), code 7 (6) — second block
    codes[16 + 15] = 0x1D;  // row 1, elements 30, 31: code 13 (-3), code 1 (0.5)
    QuantizedData q;
    q.codes = codes.data();
    q.code_row_bytes = 16;
    q.scales = scales.data();
    q.scale_dtype = DType::F8_E4M3;
    q.scale_row_stride = 2;
    q.block_cols = 16;
    q.global_scale = 0.25f;
    Weight w = shard_of(WeightFormat::Nvfp4, q, 0, 2, 0, 32);
    std::vector<float> out(64);
    dequantize_rows(w, 0, 2, out.data());
    EXPECT_EQ(out[0], 1.0f * 2.0f * 0.25f);
    EXPECT_EQ(out[1], -0.5f * 2.0f * 0.25f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[16], -6.0f * 0.5f * 0.25f);
    EXPECT_EQ(out[17], 6.0f * 0.5f * 0.25f);
    EXPECT_EQ(out[32 + 30], -3.0f * 4.0f * 0.25f);
    EXPECT_EQ(out[32 + 31], 0.5f * 4.0f * 0.25f);
    // The shard of row 1, inputs 16..31 reads the same values through global indices.
    Weight s = shard_of(WeightFormat::Nvfp4, q, 1, 1, 16, 16);
    std::vector<float> part(16);
    dequantize_rows(s, 0, 1, part.data());
    EXPECT_EQ(part[14], out[32 + 30]);
    EXPECT_EQ(part[15], out[32 + 31]);
}

TEST(Fp8Block, ScalesPerBlockWithRaggedEdges) {
    // 130 x 260: blocks of 128 x 128 give a 2 x 3 scale grid, the last row and column ragged.
    const int64_t n = 130, k = 260;
    std::vector<uint8_t> codes(n * k, 0x38);  // every weight 1.0 before scaling
    codes[129 * k + 259] = 0xC0;              // -2.0 in the bottom-right corner
    codes[5 * k + 3] = 0x01;                  // a subnormal: 2^-9
    std::vector<float> scale = {1, 2, 3, 4, 5, 6};
    QuantizedData q;
    q.codes = codes.data();
    q.code_row_bytes = k;
    q.scales = reinterpret_cast<const uint8_t*>(scale.data());
    q.scale_dtype = DType::F32;
    q.scale_row_stride = 3;
    q.block_rows = q.block_cols = 128;
    Weight w = shard_of(WeightFormat::Fp8Block, q, 0, n, 0, k);
    std::vector<float> out(n * k);
    dequantize_rows(w, 0, n, out.data());
    EXPECT_EQ(out[127 * k + 127], 1.0f);
    EXPECT_EQ(out[127 * k + 128], 2.0f);
    EXPECT_EQ(out[127 * k + 256], 3.0f);
    EXPECT_EQ(out[128 * k + 0], 4.0f);
    EXPECT_EQ(out[128 * k + 255], 5.0f);
    EXPECT_EQ(out[129 * k + 259], -12.0f);
    EXPECT_EQ(out[5 * k + 3], std::ldexp(1.0f, -9));
    // A shard that starts inside a block (rows 100.., cols 200..) uses the global block indices.
    Weight s = shard_of(WeightFormat::Fp8Block, q, 100, 30, 200, 60);
    std::vector<float> part(30 * 60);
    dequantize_rows(s, 0, 30, part.data());
    EXPECT_EQ(part[0], 2.0f);               // (100, 200): block (0, 1)
    EXPECT_EQ(part[27 * 60 + 55], 2.0f);    // (127, 255): block (0, 1)
    EXPECT_EQ(part[28 * 60 + 55], 5.0f);    // (128, 255): block (1, 1)
    EXPECT_EQ(part[28 * 60 + 59], 6.0f);    // (128, 259): block (1, 2), ragged
    EXPECT_EQ(part[29 * 60 + 59], -12.0f);  // (129, 259)
}

TEST(Int4Group, SignedNibblesLsbFirstAndGroupScales) {
    // 1 row x 64 inputs: 8 int32 words, 2 group scales (BF16 0.5 and 3.0).
    std::vector<uint32_t> words(8, 0x88888888u);  // all zero (q = 8 - 8)
    // element i of word 0: nibbles [0, 8, 15, 9, 10, 11, 7, 8] -> q = [-8, 0, 7, 1, 2, 3, -1, 0]
    const uint32_t nib[8] = {0, 8, 15, 9, 10, 11, 7, 8};
    words[0] = 0;
    for (int i = 0; i < 8; ++i) words[0] |= nib[i] << (4 * i);
    words[4] = 0x8888888Fu;  // element 32: q = 7, second group
    std::vector<uint16_t> scales = {f32_to_bf16(0.5f), f32_to_bf16(3.0f)};
    QuantizedData q;
    q.codes = reinterpret_cast<const uint8_t*>(words.data());
    q.code_row_bytes = 32;
    q.scales = reinterpret_cast<const uint8_t*>(scales.data());
    q.scale_dtype = DType::BF16;
    q.scale_row_stride = 2;
    q.block_cols = 32;
    Weight w = shard_of(WeightFormat::Int4Group, q, 0, 1, 0, 64);
    std::vector<float> out(64);
    dequantize_rows(w, 0, 1, out.data());
    const float want[8] = {-4.0f, 0.0f, 3.5f, 0.5f, 1.0f, 1.5f, -0.5f, 0.0f};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], want[i]) << i;
    EXPECT_EQ(out[31], 0.0f);
    EXPECT_EQ(out[32], 21.0f);
    Weight s = shard_of(WeightFormat::Int4Group, q, 0, 1, 32, 32);
    std::vector<float> part(32);
    dequantize_rows(s, 0, 1, part.data());
    EXPECT_EQ(part[0], 21.0f);
}

TEST(QuantizedLinear, TiledProductEqualsTheDequantisedDenseProduct) {
    // 300 output rows x 4096 inputs: several 64-row tiles and a ragged last one.
    const int64_t n = 300, k = 4096, m = 3;
    std::mt19937 rng(5);
    std::vector<uint32_t> words(n * k / 8);
    for (auto& wd : words) wd = rng();
    std::vector<uint16_t> scales(n * k / 32);
    for (auto& s : scales) s = f32_to_bf16(0.01f * static_cast<float>(1 + rng() % 100));
    QuantizedData q;
    q.codes = reinterpret_cast<const uint8_t*>(words.data());
    q.code_row_bytes = k / 2;
    q.scales = reinterpret_cast<const uint8_t*>(scales.data());
    q.scale_dtype = DType::BF16;
    q.scale_row_stride = k / 32;
    q.block_cols = 32;
    Weight w = shard_of(WeightFormat::Int4Group, q, 0, n, 0, k);
    std::vector<float> dense(n * k), x(m * k), got(m * n), want(m * n);
    dequantize_rows(w, 0, n, dense.data());
    std::normal_distribution<float> normal;
    for (auto& v : x) v = normal(rng);
    CpuOps ops(2);
    ops.linear(Tensor(x.data(), DType::F32, {m, k}), w, Tensor(got.data(), DType::F32, {m, n}));
    sgemm_nt(m, n, k, x.data(), k, dense.data(), k, want.data(), n);
    float scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    for (int64_t i = 0; i < m * n; ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * scale) << i;
}

}  // namespace
}  // namespace myriad
