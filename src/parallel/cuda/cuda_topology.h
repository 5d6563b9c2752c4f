// The topology of CUDA's devices: NVML's links and NUMA nodes (parallel/topology_probe.h),
// matched to CUDA's device order through each device's PCI bus id (the orders differ unless
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers), with CUDA's peer-access
// matrix (cudaDeviceCanAccessPeer: what the driver claims; a real write and read-back is the
// all-reduce's start-up check).
#pragma once

#include <vector>

#include "parallel/topology.h"

namespace myriad::cuda {

// The GPUs `devices` (CUDA indices; every device when empty). Without a usable CUDA device, the
// NVML view alone, with the reason in the note.
Topology probe_cuda_topology(const std::vector<int>& devices = {});

}  // namespace myriad::cuda
