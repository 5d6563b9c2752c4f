// Weight: one linear layer's weights in a runtime format. Loaders turn file formats into these;
// Ops::linear dispatches on the format. Logical shape is [rows = out features, cols = in].
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "util/tensor.h"

namespace myriad {

// Dense: BF16/F16/F32 converted by the backend. The quantised formats (reference.md §2):
//   Fp8Block   float8_e4m3fn codes [R, C] with an F32 dequant scale per block_rows x block_cols
//              block (DeepSeek weight_scale_inv, 128 x 128).
//   Nvfp4      e2m1 codes, two per byte (low nibble first), [R, C/2]; an e4m3 scale per 16
//              inputs [R, C/16]; an F32 global scale (ModelOpt weight_scale_2).
//   Int4Group  signed int4 stored as q + 8, eight per int32 (LSB first), [R, C/8]; a scale per
//              `block_cols` inputs [R, C/block_cols] (compressed-tensors pack-quantized).
//   GgufBlock  ggml blocks (Q8_0, Q4_K, ...) as the GGUF file stores them: each row of C inputs
//              is C/block_cols self-describing blocks (scales inside), `gguf_type` says which.
enum class WeightFormat : uint8_t { Dense, Fp8Block, Nvfp4, Int4Group, GgufBlock };

std::string_view weight_format_name(WeightFormat f);

// A quantised tensor's codes and scales, pointing into the checkpoint's mapping (zero copy; the
// Checkpoint must outlive every Weight loaded from it). Pointers and strides describe the FULL
// tensor; a rank's shard is rows [row_offset, +rows) x cols [col_offset, +cols) of it, so scale
// indices are always computed in global coordinates.
struct QuantizedData {
    const uint8_t* codes = nullptr;
    int64_t code_row_bytes = 0;  // bytes per full row of codes
    const uint8_t* scales = nullptr;
    DType scale_dtype = DType::F32;          // Fp8Block F32; Nvfp4 F8_E4M3; Int4Group BF16/F16/F32
    int64_t scale_row_stride = 0;            // scale elements per row of the scale tensor
    int64_t block_rows = 1, block_cols = 1;  // elements sharing one scale
    // Nvfp4 weight_scale_2. Each linear keeps its own: the CPU never fuses gate and up. A backend
    // that stacks them (the CUDA w13 [E, 2I, K/2]) must keep one global scale per half, or
    // re-express the block scales of one half against the other's, when they differ
    // (reference.md §2.2; the NVFP4 goldens' gate and up scales always differ).
    float global_scale = 1.0f;
    float input_scale = 0.0f;  // Nvfp4 static activation scale, recorded (W4A16 on the CPU)
    uint32_t gguf_type = 0;    // GgufBlock: the ggml type id (format/gguf_quants.h)
    int64_t row_offset = 0, col_offset = 0;
    size_t bytes = 0;  // codes + scales held by this shard
};

// One scale of a quantised weight's scale tensor, at (row, col) of the scale grid, as float; the
// scales may sit unaligned in the checkpoint's mapping.
float quant_scale(const QuantizedData& q, int64_t row, int64_t col);

struct Weight {
    WeightFormat format = WeightFormat::Dense;
    int64_t rows = 0, cols = 0;
    Tensor data;  // Dense: backend-owned storage, e.g. F32 [rows, cols] on the CPU
    std::shared_ptr<void> storage;  // keeps `data` alive
    QuantizedData quant;            // the quantised formats
    size_t bytes() const { return format == WeightFormat::Dense ? data.nbytes() : quant.bytes; }
};

// Values made from a seed instead of read (bench-model --random): element i of the tensor (or
// byte i of its codes, scale i of its scales) is a hash of (seed, i), so every backend and every
// rank builds the same tensor without a file (ops/synthetic_weight.h says how).
struct SyntheticValues {
    uint64_t seed = 0;       // 0: not synthetic
    float center = 0.0f;     // dense: values are center + amplitude * u, u uniform in [-1, 1)
    float amplitude = 0.0f;  // a power of two, so host and device round alike
};

// Where a weight comes from: a checkpoint tensor of logical shape [R, C], of which rows
// [row_begin, row_end) and columns [col_begin, col_end) belong to this rank. Dense: `data` in
// `dtype` (row-major). Quantised: `quant` describes the full tensor (its offsets unused).
struct WeightSource {
    const void* data = nullptr;
    DType dtype = DType::BF16;
    WeightFormat format = WeightFormat::Dense;
    QuantizedData quant;
    bool to_dense = false;  // dequantise at load (weights that ops read directly, e.g. kv_b_proj)
    SyntheticValues synthetic;  // seed set: data, codes and scales are null and generated
    int64_t src_rows = 0, src_cols = 0;
    int64_t row_begin = 0, row_end = 0;
    int64_t col_begin = 0, col_end = 0;
};

}  // namespace myriad
