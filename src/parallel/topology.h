// The GPUs of this machine and how each pair is connected: NVLink, or the PCIe path between them
// (NVML), the NUMA node of each GPU, and whether CUDA grants peer access. Printed at serve start
// and by `myriad plan --gpus auto`; the NCCL variables are chosen from it (nccl_env.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace myriad {

// The closest connection of two GPUs, best first (NVML's topology levels, NVLink above them).
enum class GpuLink : uint8_t {
    Same,          // a GPU with itself
    NvLink,        // NVLink (direct or through NVSwitch)
    Board,         // one board (multi-GPU card)
    PcieSwitch,    // one PCIe switch
    PcieSwitches,  // several PCIe switches, no host bridge
    HostBridge,    // one CPU host bridge
    NumaNode,      // host bridges of one NUMA node
    CrossSocket,   // across NUMA nodes (CPU sockets)
    Unknown,
};

// CUDA peer access between two GPUs (cudaDeviceCanAccessPeer); Unknown where not asked.
enum class PeerAccess : uint8_t { Unknown, Yes, No };

struct TopologyGpu {
    int index = 0;       // CUDA's device index (NVML's where CUDA was not asked)
    std::string name;    // "NVIDIA H200"
    std::string bus_id;  // "0000:1b:00.0", as sysfs spells it; empty when unknown
    int numa_node = -1;  // -1: unknown, or a machine without NUMA nodes
};

struct Topology {
    std::vector<TopologyGpu> gpus;
    std::vector<GpuLink> links;    // [n * n]: links[i * n + j]
    std::vector<PeerAccess> peer;  // [n * n], or empty when CUDA was not asked
    std::string source;            // what answered: "NVML", "NVML and CUDA"
    std::string note;              // what could not be found out, and why; empty when all was

    int size() const { return static_cast<int>(gpus.size()); }
    GpuLink link(int i, int j) const;
    PeerAccess peer_access(int i, int j) const;
};

// "X", "NV", "BRD", "PIX", "PXB", "PHB", "NODE", "SYS" (nvidia-smi's abbreviations), "?".
const char* link_label(GpuLink link);
// The link of an NVML topology level (nvmlGpuTopologyLevel_t: 0, 10, ... 50).
GpuLink link_of_nvml_level(int level);
// The sysfs name of a PCI device, "0000:1b:00.0", from NVML's or CUDA's spelling of its bus id
// ("00000000:1B:00.0", "0000:1B:00.0"); empty when `bus_id` is not one.
std::string sysfs_pci_address(std::string_view bus_id);
// The node in /sys/bus/pci/devices/<address>/numa_node: -1 for "-1", empty text or junk.
int parse_numa_node(std::string_view text);

// A compact matrix, one line per GPU under a header, then a legend of the labels used (and the
// note, when there is one).
std::vector<std::string> topology_lines(const Topology& t);

}  // namespace myriad
