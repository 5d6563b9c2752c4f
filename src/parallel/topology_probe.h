// The topology probe's NVML half: links between GPUs and their NUMA nodes, without CUDA (so
// `myriad plan --gpus auto` shows it in any build). parallel/cuda/cuda_topology.h adds CUDA's
// device order and peer-access matrix.
#pragma once

#include <string>
#include <vector>

#include "parallel/topology.h"

namespace myriad {

// The links and NUMA nodes of `gpus` (each with its index and PCI bus id, e.g. CUDA's devices),
// or of every GPU NVML lists, in NVML's order, when `gpus` is empty. What NVML cannot say is
// Unknown, with the reason in the note.
Topology probe_topology(std::vector<TopologyGpu> gpus = {});

// The NUMA node of PCI device `address` ("0000:1b:00.0") from `sysfs`/bus/pci/devices; -1 when
// the file is missing or says -1.
int read_numa_node(const std::string& address, const std::string& sysfs = "/sys");

}  // namespace myriad
