// Dequantisation of the quantised weight formats (ops/weight.h) into F32 rows, the CPU
// backend's way to run a quantised linear: tiles of rows are expanded into scratch memory and
// multiplied with FP32 accumulation. Formulas: reference.md §2.2-§2.4.
#pragma once

#include <cstdint>

#include "ops/weight.h"

namespace myriad {

// The e2m1 value of a 4-bit code: bit 3 sign, bits 0-2 index [0, 0.5, 1, 1.5, 2, 3, 4, 6].
float e2m1_to_f32(uint8_t code);

// Writes rows [r0, r1) of the shard `w` (shard-local row indices, all its columns) as F32 to
// `out`, row stride w.cols. `w` must be quantised.
void dequantize_rows(const Weight& w, int64_t r0, int64_t r1, float* out);

}  // namespace myriad
