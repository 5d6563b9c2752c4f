// Which Ops backend runs a rank: the CPU reference, or the CUDA backend when this build has one.
// The CPU build needs nothing from CUDA; a CUDA build still starts on a machine without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/kernel_plan.h"
#include "ops/ops.h"
#include "parallel/communicator.h"

namespace myriad {

// True when this binary was built with the CUDA backend (MYRIAD_CUDA at configure time).
bool cuda_backend_built();

// CUDA devices usable by this process: 0 without the backend, a driver or a GPU. When 0,
// `why` (optional) gets a one-line reason naming what is missing.
int cuda_device_count(std::string* why = nullptr);

// The device of a run from --device: "cpu", "cuda" (GPU 0; bad input naming the flag when there
// is none) or "auto", the default: the GPU when one is usable and the run is one rank (GPU tensor
// parallelism is not built yet), else the CPU. `note` gets one line when auto chose the GPU or
// passed one over, and stays empty on a machine without one.
Device resolve_device(const std::string& flag, int tp, std::string* note);

// GPU `index`'s name and compute capability; false without the backend or that GPU.
bool cuda_device_info(int index, GpuInfo* info);
// The CUDA architectures this binary was built for (CMAKE_CUDA_ARCHITECTURES), empty without
// the backend.
std::vector<std::string> cuda_built_architectures();

// The CUDA backend on device `index`; bad input (exit 2) with the reason when there is none.
std::unique_ptr<Ops> make_cuda_ops(int index);

// Bytes per second of a large device-to-device copy on GPU `index` (read + written counted,
// median of several), the roofline's bandwidth; 0 without the backend.
double cuda_copy_bandwidth(int index);

// A communicator for one rank on one GPU (world 1): collectives are device-memory copies.
std::unique_ptr<Communicator> make_single_gpu_communicator();

}  // namespace myriad
