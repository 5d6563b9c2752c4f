#include "parallel/cuda/cuda_topology.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "parallel/topology_probe.h"

namespace myriad::cuda {

Topology probe_cuda_topology(const std::vector<int>& devices) {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
        cudaGetLastError();
        Topology t = probe_topology();
        const std::string why = e != cudaSuccess
                                    ? fmt::format("no CUDA peer access: {}", cudaGetErrorString(e))
                                    : "no CUDA peer access: no CUDA device";
        t.note += (t.note.empty() ? "" : "; ") + why;
        return t;
    }
    std::vector<int> list = devices;
    if (list.empty())
        for (int d = 0; d < count; ++d) list.push_back(d);
    std::vector<TopologyGpu> gpus;
    std::string bad;
    for (int d : list) {
        TopologyGpu g;
        g.index = d;
        char bus[32] = {};
        cudaDeviceProp prop{};
        if (d >= 0 && d < count && cudaDeviceGetPCIBusId(bus, sizeof(bus), d) == cudaSuccess &&
            cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
            g.bus_id = sysfs_pci_address(bus);
            g.name = prop.name;
        } else {
            cudaGetLastError();
            bad += fmt::format("{}GPU {}", bad.empty() ? "" : ", ", d);
        }
        gpus.push_back(g);
    }
    Topology t = probe_topology(gpus);
    t.source = "NVML and CUDA";
    const size_t n = list.size();
    t.peer.assign(n * n, PeerAccess::Unknown);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            const int a = list[i], b = list[j];
            if (i == j || a == b || a < 0 || b < 0 || a >= count || b >= count) continue;
            int can = 0;
            if (cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess)
                t.peer[i * n + j] = can ? PeerAccess::Yes : PeerAccess::No;
            else
                cudaGetLastError();
        }
    if (!bad.empty()) t.note += (t.note.empty() ? "" : "; ") + ("CUDA does not know " + bad);
    return t;
}

}  // namespace myriad::cuda
