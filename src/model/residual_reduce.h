// The seam where a sub-layer's partial output meets the residual stream: the all-reduce over
// ranks, the residual add and the next norm. A communicator that can do the three in one kernel
// does (the device one, at one-shot sizes); otherwise all_reduce_sum, then the ops' add_rmsnorm
// (or add, for the last layer). Either way every rank ends with the same h and x.
#pragma once

#include "ops/ops.h"
#include "ops/weight.h"
#include "parallel/communicator.h"
#include "util/tensor.h"

namespace myriad {

// h += the sum of y over ranks; then, with a norm, x = rmsnorm(h) * norm (eps). y is the
// sub-layer's output [T, D] (its contents are undefined afterwards); norm null: the plain add.
void reduce_add_rmsnorm(Communicator& comm, Ops& ops, Tensor y, Tensor h, const Weight* norm,
                        float eps, Tensor x);

}  // namespace myriad
