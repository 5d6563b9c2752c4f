// ggml tensor types as GGUF stores them: names, block geometry, and the dequantisers of the
// types myriad reads (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). Formulas as ggml's
// dequantize_row_* (and the gguf Python package's gguf.quants.dequantize, which tests compare
// against bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace myriad {

enum class GgufType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30,
};

// ggml's name of type id `id` ("Q4_K", "IQ2_XXS", ...), or "type <id>" for ids ggml does not have.
std::string gguf_type_name(uint32_t id);
inline std::string gguf_type_name(GgufType t) {
    return gguf_type_name(static_cast<uint32_t>(t));
}

// The type for `id` when myriad reads it, else nullopt.
std::optional<GgufType> gguf_supported_type(uint32_t id);

// Elements per block (1 for F32/F16/BF16, 32 for Q8_0/Q4_0, 256 for the k-quants) and bytes per
// block.
int64_t gguf_block_elems(GgufType t);
size_t gguf_block_bytes(GgufType t);
bool gguf_is_quantized(GgufType t);

// Writes `nblocks` whole blocks at `src` as nblocks * gguf_block_elems(t) floats to `dst`.
void gguf_dequantize_blocks(GgufType t, const uint8_t* src, int64_t nblocks, float* dst);

// Elements [c0, c0 + n) of a row whose blocks start at `row` (any alignment of c0 and n).
void gguf_dequantize_range(GgufType t, const uint8_t* row, int64_t c0, int64_t n, float* dst);

}  // namespace myriad
