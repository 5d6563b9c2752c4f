// The CUDA backend's entry points for ops/backend.cpp (compiled only when CUDA is on).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/kernel_choices.h"
#include "ops/ops.h"
#include "parallel/communicator.h"

namespace myriad::cuda {

int device_count(std::string* why);
// GPU `index`'s name, compute capability (major * 10 + minor), memory and multiprocessors;
// false if there is none.
bool device_info(int index, std::string* name, int* cc, uint64_t* memory = nullptr,
                 int* sms = nullptr);
std::unique_ptr<Ops> make_ops(int index, const KernelChoices& choices, bool graphs);
std::unique_ptr<Communicator> make_single_gpu_communicator();
// The group of ranks on GPUs devices[r] (repeats allowed), and rank `rank`'s communicator on
// the stream of `ops` (a CudaOps).
std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>& devices);
std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>& group,
                                                    int rank, Ops& ops);
std::unique_ptr<Communicator> make_modelled_gpu_communicator(int world, int rank, double wait_us,
                                                             Ops& ops);
// Seconds spent capturing decode graphs by every CudaOps of the process (cuda_graphs.cpp).
double graph_capture_seconds_total();
double copy_bandwidth(int index);
// Bytes in use on GPU `index` (total - free, every process's); false if there is none.
bool memory_in_use(int index, uint64_t* used);

}  // namespace myriad::cuda
