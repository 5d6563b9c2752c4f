#include "parallel/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace myriad {

GpuLink Topology::link(int i, int j) const {
    if (i == j) return GpuLink::Same;
    const size_t n = gpus.size();
    const size_t k = static_cast<size_t>(i) * n + static_cast<size_t>(j);
    return k < links.size() ? links[k] : GpuLink::Unknown;
}

PeerAccess Topology::peer_access(int i, int j) const {
    const size_t n = gpus.size();
    const size_t k = static_cast<size_t>(i) * n + static_cast<size_t>(j);
    return i != j && k < peer.size() ? peer[k] : PeerAccess::Unknown;
}

const char* link_label(GpuLink link) {
    switch (link) {
        case GpuLink::Same:
            return "X";
        case GpuLink::NvLink:
            return "NV";
        case GpuLink::Board:
            return "BRD";
        case GpuLink::PcieSwitch:
            return "PIX";
        case GpuLink::PcieSwitches:
            return "PXB";
        case GpuLink::HostBridge:
            return "PHB";
        case GpuLink::NumaNode:
            return "NODE";
        case GpuLink::CrossSocket:
            return "SYS";
        case GpuLink::Unknown:
            break;
    }
    return "?";
}

GpuLink link_of_nvml_level(int level) {
    switch (level) {
        case 0:
            return GpuLink::Board;
        case 10:
            return GpuLink::PcieSwitch;
        case 20:
            return GpuLink::PcieSwitches;
        case 30:
            return GpuLink::HostBridge;
        case 40:
            return GpuLink::NumaNode;
        case 50:
            return GpuLink::CrossSocket;
        default:
            return GpuLink::Unknown;
    }
}

namespace {

// A hexadecimal field of a bus id, with at most `max_digits` digits.
bool parse_hex(std::string_view s, size_t max_digits, unsigned* out) {
    if (s.empty() || s.size() > max_digits) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
    return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string sysfs_pci_address(std::string_view bus_id) {
    // domain:bus:device.function
    const size_t c1 = bus_id.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : bus_id.find(':', c1 + 1);
    const size_t dot = c2 == std::string_view::npos ? c2 : bus_id.find('.', c2 + 1);
    if (dot == std::string_view::npos) return "";
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    if (!parse_hex(bus_id.substr(0, c1), 8, &domain) ||
        !parse_hex(bus_id.substr(c1 + 1, c2 - c1 - 1), 2, &bus) ||
        !parse_hex(bus_id.substr(c2 + 1, dot - c2 - 1), 2, &device) ||
        !parse_hex(bus_id.substr(dot + 1), 1, &function))
        return "";
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

int parse_numa_node(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    int node = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), node);
    if (ec != std::errc() || end != text.data() + text.size() || node < 0) return -1;
    return node;
}

std::vector<std::string> topology_lines(const Topology& t) {
    std::vector<std::string> lines;
    const int n = t.size();
    if (n == 0) {
        lines.push_back(
            fmt::format("GPU topology: no GPUs{}", t.note.empty() ? "" : ": " + t.note));
        return lines;
    }
    const bool probed = !t.peer.empty();
    lines.push_back(fmt::format("GPU topology ({}):", t.source.empty() ? "unknown" : t.source));
    std::string head = "       ";
    for (int j = 0; j < n; ++j)
        head += fmt::format(" {:>5}", fmt::format("GPU{}", t.gpus[j].index));
    head += "  NUMA  PCI bus       name";
    lines.push_back(head);
    std::vector<GpuLink> used;
    bool no_peer = false;
    for (int i = 0; i < n; ++i) {
        const TopologyGpu& g = t.gpus[i];
        std::string row = fmt::format("  {:<5}", fmt::format("GPU{}", g.index));
        for (int j = 0; j < n; ++j) {
            const GpuLink l = t.link(i, j);
            if (l != GpuLink::Same && std::find(used.begin(), used.end(), l) == used.end())
                used.push_back(l);
            const bool no = t.peer_access(i, j) == PeerAccess::No;
            no_peer = no_peer || no;
            row += fmt::format(" {:>5}", std::string(link_label(l)) + (no ? "*" : ""));
        }
        row +=
            fmt::format("  {:>4}  {:<12}  {}", g.numa_node < 0 ? "-" : std::to_string(g.numa_node),
                        g.bus_id.empty() ? "?" : g.bus_id, g.name);
        lines.push_back(row);
    }
    std::sort(used.begin(), used.end());
    std::string legend;
    for (GpuLink l : used) {
        const char* what = "";
        switch (l) {
            case GpuLink::NvLink:
                what = "NVLink";
                break;
            case GpuLink::Board:
                what = "one board";
                break;
            case GpuLink::PcieSwitch:
                what = "one PCIe switch";
                break;
            case GpuLink::PcieSwitches:
                what = "PCIe switches";
                break;
            case GpuLink::HostBridge:
                what = "a CPU host bridge";
                break;
            case GpuLink::NumaNode:
                what = "host bridges of one NUMA node";
                break;
            case GpuLink::CrossSocket:
                what = "across CPU sockets";
                break;
            default:
                what = "not known";
                break;
        }
        legend += fmt::format("{}{} {}", legend.empty() ? "" : ", ", link_label(l), what);
    }
    if (no_peer)
        legend += fmt::format("{}* no CUDA peer access", legend.empty() ? "" : "; ");
    else if (!probed && n > 1)
        legend += fmt::format("{}CUDA peer access not asked", legend.empty() ? "" : "; ");
    if (!legend.empty()) lines.push_back("  " + legend);
    if (!t.note.empty()) lines.push_back("  note: " + t.note);
    return lines;
}

}  // namespace myriad
