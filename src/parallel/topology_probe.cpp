#include "parallel/topology_probe.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "util/nvml_library.h"

namespace myriad {

int read_numa_node(const std::string& address, const std::string& sysfs) {
    if (address.empty()) return -1;
    std::ifstream in(sysfs + "/bus/pci/devices/" + address + "/numa_node");
    if (!in) return -1;
    std::stringstream text;
    text << in.rdbuf();
    return parse_numa_node(text.str());
}

namespace {

void add_note(Topology& t, const std::string& what) {
    if (t.note.find(what) == std::string::npos) t.note += (t.note.empty() ? "" : "; ") + what;
}

}  // namespace

Topology probe_topology(std::vector<TopologyGpu> gpus) {
    Topology t;
    t.source = "NVML";
    std::string why;
    std::unique_ptr<NvmlLibrary> nvml = NvmlLibrary::open(&why);
    std::vector<NvmlDevice> devs;
    if (!nvml) {
        add_note(t, "no PCIe or NVLink links: " + why);
    } else if (gpus.empty()) {
        unsigned count = 0;
        if (int rc = nvml->device_count(&count); rc != 0) add_note(t, "NVML: " + nvml->error(rc));
        for (unsigned i = 0; i < count; ++i) {
            NvmlDevice dev = nullptr;
            if (nvml->device_by_index(i, &dev) != 0) continue;
            TopologyGpu g;
            g.index = static_cast<int>(i);
            char name[96] = {};
            if (nvml->device_name(dev, name, sizeof(name)) == 0) g.name = name;
            NvmlPciInfo pci{};
            if (nvml->pci_info && nvml->pci_info(dev, &pci) == 0)
                g.bus_id = sysfs_pci_address(pci.bus_id);
            gpus.push_back(g);
            devs.push_back(dev);
        }
    } else {
        for (TopologyGpu& g : gpus) {
            NvmlDevice dev = nullptr;
            if (!nvml->device_by_pci_bus_id || g.bus_id.empty() ||
                nvml->device_by_pci_bus_id(g.bus_id.c_str(), &dev) != 0) {
                add_note(t, fmt::format("NVML does not know GPU {} ({})", g.index,
                                        g.bus_id.empty() ? "no bus id" : g.bus_id));
                dev = nullptr;
            }
            devs.push_back(dev);
        }
    }
    if (nvml && (!nvml->common_ancestor || !nvml->p2p_status))
        add_note(t, "this driver's NVML cannot tell the links between GPUs");
    const size_t n = gpus.size();
    t.links.assign(n * n, GpuLink::Unknown);
    for (size_t i = 0; i < n; ++i) {
        t.links[i * n + i] = GpuLink::Same;
        for (size_t j = 0; j < n; ++j) {
            if (i == j || devs.size() != n || !devs[i] || !devs[j]) continue;
            if (!nvml->common_ancestor || !nvml->p2p_status) continue;
            int status = -1;
            if (nvml->p2p_status(devs[i], devs[j], kNvmlP2pCapsNvlink, &status) == 0 &&
                status == kNvmlP2pStatusOk) {
                t.links[i * n + j] = GpuLink::NvLink;
                continue;
            }
            int level = -1;
            if (nvml->common_ancestor(devs[i], devs[j], &level) == 0)
                t.links[i * n + j] = link_of_nvml_level(level);
        }
    }
    for (TopologyGpu& g : gpus) g.numa_node = read_numa_node(sysfs_pci_address(g.bus_id));
    t.gpus = std::move(gpus);
    return t;
}

}  // namespace myriad
