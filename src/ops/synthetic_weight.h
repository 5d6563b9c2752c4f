// Synthetic weights on the host (bench-model --random): ops/synthetic_values.h has the values.
#pragma once

#include <memory>

#include "ops/synthetic_values.h"
#include "ops/weight.h"

namespace myriad {

// For backends that read host memory (the CPU): the source's values generated into host
// buffers (the whole tensor), returned as an ordinary WeightSource whose pointers stay valid
// while `keep` lives.
WeightSource materialize_synthetic(const WeightSource& src, std::shared_ptr<void>& keep);

}  // namespace myriad
