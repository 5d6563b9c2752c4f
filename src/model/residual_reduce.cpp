#include "model/residual_reduce.h"

namespace myriad {

void reduce_add_rmsnorm(Communicator& comm, Ops& ops, Tensor y, Tensor h, const Weight* norm,
                        float eps, Tensor x) {
    // The fused form takes a dense norm (its values as a tensor); other formats go unfused.
    const bool dense = !norm || norm->format == WeightFormat::Dense;
    if (comm.world() > 1 && dense &&
        comm.all_reduce_add_rmsnorm(y, h, norm ? norm->data : Tensor(), eps, x))
        return;
    comm.all_reduce_sum(y);
    if (norm)
        ops.add_rmsnorm(h, y, *norm, eps, x);
    else
        ops.add(h, y);
}

}  // namespace myriad
