// Shape checks of the RMSNorm ops, shared by the backends: rows [T, D] normed by a weight of D
// values.
#pragma once

#include <cstdint>

#include "ops/weight.h"
#include "util/error.h"
#include "util/tensor.h"

namespace myriad {

// The number of rows of x that rmsnorm normalises with w.
inline int64_t rmsnorm_rows(Tensor x, const Weight& w) {
    const int64_t d = x.dim(-1);
    MYRIAD_CHECK(w.rows * w.cols == d, "rmsnorm weight of {} values for rows of {}",
                 w.rows * w.cols, d);
    return x.numel() / d;
}

// The same for add_rmsnorm, whose y and out are shaped like x.
inline int64_t add_rmsnorm_rows(Tensor x, Tensor y, const Weight& w, Tensor out) {
    MYRIAD_CHECK(y.numel() == x.numel() && out.numel() == x.numel(),
                 "add_rmsnorm: {}, {} and {} disagree", x.shape_str(), y.shape_str(),
                 out.shape_str());
    return rmsnorm_rows(x, w);
}

}  // namespace myriad
