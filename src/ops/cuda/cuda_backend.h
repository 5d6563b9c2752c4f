// The CUDA backend's entry points for ops/backend.cpp (compiled only when CUDA is on).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "parallel/communicator.h"

namespace myriad::cuda {

int device_count(std::string* why);
// GPU `index`'s name and compute capability (major * 10 + minor); false if there is none.
bool device_info(int index, std::string* name, int* cc, uint64_t* memory = nullptr);
std::unique_ptr<Ops> make_ops(int index, bool graphs);
std::unique_ptr<Communicator> make_single_gpu_communicator();
// The group of ranks on GPUs devices[r] (repeats allowed), and rank `rank`'s communicator on
// the stream of `ops` (a CudaOps).
std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>& devices);
std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>& group,
                                                    int rank, Ops& ops);
double copy_bandwidth(int index);
// Bytes in use on GPU `index` (total - free, every process's); false if there is none.
bool memory_in_use(int index, uint64_t* used);

}  // namespace myriad::cuda
