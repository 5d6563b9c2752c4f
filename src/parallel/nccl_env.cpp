#include "parallel/nccl_env.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace myriad {

NcclTopologySummary summarize_for_nccl(const Topology& t) {
    NcclTopologySummary s;
    s.gpus = t.size();
    s.all_nvlink = true;
    s.links_known = true;
    s.peer_known = !t.peer.empty();
    s.peer_everywhere = s.peer_known;
    for (int i = 0; i < s.gpus; ++i)
        for (int j = 0; j < s.gpus; ++j) {
            if (i == j) continue;
            const GpuLink l = t.link(i, j);
            if (l != GpuLink::NvLink) s.all_nvlink = false;
            if (l == GpuLink::Unknown) s.links_known = false;
            if (l == GpuLink::CrossSocket) s.cross_socket = true;
            if (t.peer_access(i, j) != PeerAccess::Yes) s.peer_everywhere = false;
        }
    const int a = s.gpus > 0 ? t.gpus[0].numa_node : -1;
    for (const TopologyGpu& g : t.gpus)
        if (g.numa_node >= 0 && a >= 0 && g.numa_node != a) s.cross_socket = true;
    return s;
}

NcclEnvChoice choose_nccl_env(const NcclTopologySummary& topo,
                              const std::map<std::string, std::string>& user) {
    std::vector<std::pair<std::string, std::string>> want = {{"NCCL_NVLS_ENABLE", "0"}};
    std::string why = "NVLink multicast off: it can take a shared machine's GPUs out of service";
    if (topo.gpus > 1 && !topo.links_known) {
        why = "the links between the GPUs are not known: NCCL's own choices; " + why;
    } else if (topo.gpus > 1 && topo.all_nvlink) {
        why = "NVLink between every pair: NCCL's own choices; " + why;
    } else if (topo.gpus > 1) {
        std::string pcie =
            topo.cross_socket ? "PCIe between GPUs, across CPU sockets" : "PCIe between GPUs";
        if (topo.peer_everywhere) {
            want.emplace_back("NCCL_P2P_LEVEL", "SYS");
            pcie += ", CUDA peer access between every pair";
        } else if (topo.peer_known) {
            pcie += ", CUDA peer access missing between some: NCCL_P2P_LEVEL left to NCCL";
        } else {
            pcie += ", CUDA peer access not known: NCCL_P2P_LEVEL left to NCCL";
        }
        want.emplace_back("NCCL_PROTO", "LL");
        want.emplace_back("NCCL_MIN_NCHANNELS", "8");
        why = pcie + "; " + why;
    }
    NcclEnvChoice c;
    std::string chosen;
    for (const auto& [name, value] : want) {
        if (user.count(name)) continue;
        c.set.emplace_back(name, value);
        chosen += fmt::format(" {}={}", name, value);
    }
    std::string kept;
    for (const auto& [name, value] : user)
        kept += fmt::format("{}{}={}", kept.empty() ? "" : " ", name, value);
    c.line = fmt::format("NCCL:{} ({})", chosen.empty() ? " nothing set" : chosen, why);
    if (!kept.empty()) c.line += "; yours, kept: " + kept;
    return c;
}

namespace {

// What apply_nccl_env set, so a second group does not take it for the user's.
std::mutex g_mutex;
std::map<std::string, std::string> g_ours;

}  // namespace

std::map<std::string, std::string> nccl_user_environment() {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::map<std::string, std::string> out;
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const size_t eq = kv.find('=');
        if (kv.rfind("NCCL_", 0) != 0 || eq == std::string::npos) continue;
        const std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
        auto it = g_ours.find(name);
        if (it != g_ours.end() && it->second == value) continue;
        out[name] = value;
    }
    return out;
}

void apply_nccl_env(const NcclEnvChoice& choice) {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& [name, value] : choice.set) {
        if (std::getenv(name.c_str())) continue;
        if (setenv(name.c_str(), value.c_str(), 0) == 0) g_ours[name] = value;
    }
}

}  // namespace myriad
