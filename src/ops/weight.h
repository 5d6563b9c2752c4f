// Weight: one linear layer's weights in a runtime format. Loaders turn file formats into these;
// Ops::linear dispatches on the format. Logical shape is [rows = out features, cols = in].
#pragma once

#include <cstdint>
#include <memory>

#include "util/tensor.h"

namespace myriad {

enum class WeightFormat : uint8_t { Dense };

struct Weight {
    WeightFormat format = WeightFormat::Dense;
    int64_t rows = 0, cols = 0;
    Tensor data;                    // backend-owned storage, e.g. F32 [rows, cols] on the CPU
    std::shared_ptr<void> storage;  // keeps `data` alive
    size_t bytes() const { return data.nbytes(); }
};

// Where a weight comes from: a checkpoint tensor of shape [R, C] in `dtype` (row-major), of
// which rows [row_begin, row_end) and columns [col_begin, col_end) belong to this rank.
struct WeightSource {
    const void* data = nullptr;
    DType dtype = DType::BF16;
    int64_t src_rows = 0, src_cols = 0;
    int64_t row_begin = 0, row_end = 0;
    int64_t col_begin = 0, col_end = 0;
};

}  // namespace myriad
