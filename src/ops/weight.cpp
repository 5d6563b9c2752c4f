#include "ops/weight.h"

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

}  // namespace myriad
