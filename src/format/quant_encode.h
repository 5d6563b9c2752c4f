// Quantisers that write the checkpoint formats myriad reads (reference.md §2.2, §2.3), with the
// export-side definitions of ModelOpt (NVFP4) and DeepSeek (FP8 blocks). The arithmetic is float32
// step for step as those exporters do it, so the codes equal a reference packer's bit for bit
// (tests compare with tools/quant_pack.py).
#pragma once

#include <cstdint>
#include <vector>

namespace myriad {

// |v| clipped to 6, to the nearest e2m1 grid point (ties to even); bit 3 is the sign.
uint8_t e2m1_encode(float v);

struct Nvfp4Quantized {
    std::vector<uint8_t> packed;  // [n, k/2], element 2j in the low nibble of byte j
    std::vector<uint8_t> scales;  // [n, k/16] float8_e4m3fn
    float global_scale = 0;       // weight_scale_2 = amax / (6 * 448)
};

// w [n, k] row-major float, k a multiple of 16.
Nvfp4Quantized nvfp4_quantize(const float* w, int64_t n, int64_t k);

struct Fp8BlockQuantized {
    std::vector<uint8_t> codes;    // [n, k] float8_e4m3fn
    std::vector<float> scale_inv;  // [ceil(n/br), ceil(k/bc)]: amax / 448 (1 for a zero block)
};

Fp8BlockQuantized fp8_block_quantize(const float* w, int64_t n, int64_t k, int64_t block_rows = 128,
                                     int64_t block_cols = 128);

}  // namespace myriad
