// Which Ops backend runs a rank: the CPU reference, or the CUDA backend when this build has one.
// The CPU build needs nothing from CUDA; a CUDA build still starts on a machine without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/kernel_plan.h"
#include "ops/ops.h"
#include "parallel/communicator.h"
#include "parallel/topology.h"

namespace myriad {

// True when this binary was built with the CUDA backend (MYRIAD_CUDA at configure time).
bool cuda_backend_built();

// CUDA devices usable by this process: 0 without the backend, a driver or a GPU. When 0,
// `why` (optional) gets a one-line reason naming what is missing.
int cuda_device_count(std::string* why = nullptr);

// The device of a run from --device: "cpu", "cuda" (GPU 0; bad input naming the flag when there
// is none) or "auto", the default: the GPU when one is usable (every rank on a GPU: --devices),
// else the CPU. `note` gets one line when auto chose the GPU or
// passed one over, and stays empty on a machine without one.
// With more ranks than GPUs and neither --devices (`devices`) nor MYRIAD_CUDA_DEVICES placing
// them, auto takes the CPU (saying so) and cuda stops naming --devices.
Device resolve_device(const std::string& flag, int tp, std::string* note,
                      const std::string& devices = "");

// GPU `index`'s name, compute capability, memory and multiprocessors; false without the backend
// or that GPU.
bool cuda_device_info(int index, GpuInfo* info);
// The CUDA architectures this binary was built for (CMAKE_CUDA_ARCHITECTURES), empty without
// the backend.
std::vector<std::string> cuda_built_architectures();

// The CUDA backend on device `index` running `choices` (ops/kernel_choices.h: the plan's, for
// this rank); bad input (exit 2) with the reason when there is none. `graphs` false: no CUDA
// graphs (ranks of several, whose collectives wait on the host).
std::unique_ptr<Ops> make_cuda_ops(int index, const KernelChoices& choices, bool graphs = true);

// Seconds the process's CUDA backends spent capturing decode graphs so far; 0 without them.
double cuda_graph_capture_seconds();

// Bytes per second of a large device-to-device copy on GPU `index` (read + written counted,
// median of several), the roofline's bandwidth; 0 without the backend.
double cuda_copy_bandwidth(int index);

// Bytes in use on GPU `index` (total - free, as cudaMemGetInfo sees it: every process's); false
// without the backend or that GPU.
bool cuda_memory_in_use(int index, uint64_t* used);

// A communicator for one rank on one GPU (world 1): collectives are device-memory copies.
std::unique_ptr<Communicator> make_single_gpu_communicator();

// Ranks of this process on GPUs: devices[r] is rank r's GPU, repeats allowed (ranks on one GPU
// reduce through plain device buffers: parallel/cuda/device_communicator.h). Bad input naming
// --devices for a GPU that is not there.
std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>& devices);
// Rank `rank`'s communicator, on the stream of `ops` (the CUDA backend of that rank).
std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>& group,
                                                    int rank, Ops& ops);

// Rank `rank` of `world` on the stream of `ops` (a CUDA backend) with no other rank: each
// collective a wait of `wait_us` on the GPU (parallel/cuda/modelled_gpu_communicator.h).
std::unique_ptr<Communicator> make_modelled_gpu_communicator(int world, int rank, double wait_us,
                                                             Ops& ops);

// The GPUs of this machine and their links: NVML's view in CUDA's device order with CUDA's peer
// access (NVML's order and no peer access without the backend); `topology_lines` prints it.
Topology gpu_topology();

// The GPUs of `tp` ranks: --devices "0,0,1,1" (or MYRIAD_CUDA_DEVICES when the flag is empty),
// one per rank, repeats allowed; neither given: GPUs 0..tp-1. Bad input naming the flag when the
// list is malformed or its length is not tp.
std::vector<int> parse_devices(const std::string& flag, int tp);

}  // namespace myriad
