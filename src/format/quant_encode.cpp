#include "format/quant_encode.h"

#include <algorithm>
#include <cmath>

#include "util/dtype.h"
#include "util/error.h"

namespace myriad {

uint8_t e2m1_encode(float v) {
    v = std::clamp(v, -6.0f, 6.0f);
    const float a = std::fabs(v);
    // Grid 0, .5, 1, 1.5, 2, 3, 4, 6: midpoints .25, 1.25, 2.5, 5 round down (to the even
    // code), .75, 1.75, 3.5 round up.
    uint8_t code = 0;
    if (a > 0.25f) code = 1;
    if (a >= 0.75f) code = 2;
    if (a > 1.25f) code = 3;
    if (a >= 1.75f) code = 4;
    if (a > 2.5f) code = 5;
    if (a >= 3.5f) code = 6;
    if (a > 5.0f) code = 7;
    return static_cast<uint8_t>(code | (std::signbit(v) ? 8 : 0));
}

Nvfp4Quantized nvfp4_quantize(const float* w, int64_t n, int64_t k) {
    MYRIAD_CHECK(k % 16 == 0, "nvfp4_quantize: {} inputs are not a multiple of 16", k);
    Nvfp4Quantized q;
    float amax = 0;
    for (int64_t i = 0; i < n * k; ++i) amax = std::max(amax, std::fabs(w[i]));
    q.global_scale = amax / 2688.0f;  // 6 * 448
    const int64_t blocks = k / 16;
    q.packed.assign(static_cast<size_t>(n * k / 2), 0);
    q.scales.resize(static_cast<size_t>(n * blocks));
    const float six_ws2 = 6.0f * q.global_scale;
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t b = 0; b < blocks; ++b) {
            const float* x = w + r * k + b * 16;
            float bamax = 0;
            for (int i = 0; i < 16; ++i) bamax = std::max(bamax, std::fabs(x[i]));
            const uint8_t sf = bamax == 0 ? f32_to_f8e4m3(1.0f)
                                          : f32_to_f8e4m3(std::max(bamax / six_ws2, 0x1p-9f));
            q.scales[static_cast<size_t>(r * blocks + b)] = sf;
            const float denom = f8e4m3_to_f32(sf) * q.global_scale;
            uint8_t* out = q.packed.data() + r * k / 2 + b * 8;
            for (int i = 0; i < 16; i += 2)
                out[i / 2] = static_cast<uint8_t>(e2m1_encode(x[i] / denom) |
                                                  (e2m1_encode(x[i + 1] / denom) << 4));
        }
    }
    return q;
}

Fp8BlockQuantized fp8_block_quantize(const float* w, int64_t n, int64_t k, int64_t br, int64_t bc) {
    Fp8BlockQuantized q;
    const int64_t nb = (n + br - 1) / br, kb = (k + bc - 1) / bc;
    q.codes.resize(static_cast<size_t>(n * k));
    q.scale_inv.assign(static_cast<size_t>(nb * kb), 1.0f);
    for (int64_t bi = 0; bi < nb; ++bi) {
        for (int64_t bj = 0; bj < kb; ++bj) {
            const int64_t r0 = bi * br, r1 = std::min(n, r0 + br);
            const int64_t c0 = bj * bc, c1 = std::min(k, c0 + bc);
            float amax = 0;
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * k + c]));
            const float s = amax > 0 ? amax / 448.0f : 1.0f;
            q.scale_inv[static_cast<size_t>(bi * kb + bj)] = s;
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; ++c)
                    q.codes[static_cast<size_t>(r * k + c)] = f32_to_f8e4m3(w[r * k + c] / s);
        }
    }
    return q;
}

}  // namespace myriad
