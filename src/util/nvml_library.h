// NVML (the NVIDIA driver's management library), loaded with dlopen so that myriad runs, plans
// and tests on machines without the driver. One loader for every user: the GPU list of
// `myriad plan --gpus auto` and the topology probe of the parallel layer.
#pragma once

#include <memory>
#include <string>

namespace myriad {

// The few entry points used, with the ABI of nvml.h: return codes are ints (NVML_SUCCESS 0),
// devices opaque pointers.
struct NvmlMemory {
    unsigned long long total, free, used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
// nvmlGpuTopologyLevel_t: the closest PCIe ancestor of two GPUs.
enum class NvmlTopologyLevel : int {
    Internal = 0,     // one board
    Single = 10,      // one PCIe switch
    Multiple = 20,    // several PCIe switches, no host bridge
    HostBridge = 30,  // one CPU host bridge
    Node = 40,        // host bridges of one NUMA node
    System = 50,      // across NUMA nodes (CPU sockets)
};
constexpr int kNvmlP2pCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kNvmlP2pStatusOk = 0;    // NVML_P2P_STATUS_OK

using NvmlDevice = void*;

class NvmlLibrary {
  public:
    // libnvidia-ml.so.1 (or $MYRIAD_NVML_LIBRARY), initialised; null with `why` set (the library
    // could not be loaded, lacks a function, or NVML did not start).
    static std::unique_ptr<NvmlLibrary> open(std::string* why);
    ~NvmlLibrary();
    NvmlLibrary(const NvmlLibrary&) = delete;
    NvmlLibrary& operator=(const NvmlLibrary&) = delete;

    // The message of an NVML return code.
    std::string error(int rc) const;

    // Always present (open fails without them).
    int (*device_count)(unsigned*) = nullptr;
    int (*device_by_index)(unsigned, NvmlDevice*) = nullptr;
    int (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
    int (*device_name)(NvmlDevice, char*, unsigned) = nullptr;
    // Null where the driver lacks them (the topology then says it does not know).
    int (*device_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
    int (*pci_info)(NvmlDevice, NvmlPciInfo*) = nullptr;
    int (*common_ancestor)(NvmlDevice, NvmlDevice, int*) = nullptr;
    int (*p2p_status)(NvmlDevice, NvmlDevice, int, int*) = nullptr;

  private:
    NvmlLibrary() = default;
    void* handle_ = nullptr;
    int (*shutdown_)() = nullptr;
    const char* (*error_string_)(int) = nullptr;
};

}  // namespace myriad
