#include "ops/weight.h"

#include <cstring>

#include "util/error.h"

namespace myriad {

std::string_view weight_format_name(WeightFormat f) {
    switch (f) {
        case WeightFormat::Dense:
            return "dense";
        case WeightFormat::Fp8Block:
            return "fp8-block";
        case WeightFormat::Nvfp4:
            return "nvfp4";
        case WeightFormat::Int4Group:
            return "int4-group";
        case WeightFormat::GgufBlock:
            return "gguf";
    }
    return "?";
}

float quant_scale(const QuantizedData& q, int64_t row, int64_t col) {
    const uint8_t* p = q.scales + (row * q.scale_row_stride + col) * dtype_size(q.scale_dtype);
    switch (q.scale_dtype) {
        case DType::F32: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
        case DType::BF16: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return bf16_to_f32(v);
        }
        case DType::F16: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return f16_to_f32(v);
        }
        case DType::F8_E4M3:
            return f8e4m3_to_f32(*p);
        default:
            internal_error("scale dtype {} is not a float type", dtype_name(q.scale_dtype));
    }
}

}  // namespace myriad
