// The GPU topology's pure parts (parallel/topology.h): bus ids as sysfs spells them, NUMA nodes
// from sysfs text, NVML's levels, and the printed matrix, on made-up machines.
#include "parallel/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/topology_probe.h"
#include "temp_dir.h"

namespace myriad {
namespace {

TEST(Topology, BusIdsInSysfsSpelling) {
    EXPECT_EQ(sysfs_pci_address("00000000:1B:00.0"), "0000:1b:00.0");  // NVML
    EXPECT_EQ(sysfs_pci_address("0000:C1:00.0"), "0000:c1:00.0");      // CUDA
    EXPECT_EQ(sysfs_pci_address("0001:02:1f.3"), "0001:02:1f.3");
    EXPECT_EQ(sysfs_pci_address(""), "");
    EXPECT_EQ(sysfs_pci_address("1B:00.0"), "");
    EXPECT_EQ(sysfs_pci_address("0000:1G:00.0"), "");
    EXPECT_EQ(sysfs_pci_address("0000:1b:00.0x"), "");
}

TEST(Topology, NumaNodeText) {
    EXPECT_EQ(parse_numa_node("1\n"), 1);
    EXPECT_EQ(parse_numa_node("0"), 0);
    EXPECT_EQ(parse_numa_node("-1\n"), -1);
    EXPECT_EQ(parse_numa_node(""), -1);
    EXPECT_EQ(parse_numa_node("x"), -1);
}

TEST(Topology, NumaNodeFromSysfs) {
    testing::TempDir dir;
    std::filesystem::create_directories(dir.path() + "/bus/pci/devices/0000:41:00.0");
    dir.write("bus/pci/devices/0000:41:00.0/numa_node", "3\n");
    EXPECT_EQ(read_numa_node("0000:41:00.0", dir.path()), 3);
    EXPECT_EQ(read_numa_node("0000:42:00.0", dir.path()), -1);
    EXPECT_EQ(read_numa_node("", dir.path()), -1);
}

TEST(Topology, NvmlLevels) {
    EXPECT_EQ(link_of_nvml_level(10), GpuLink::PcieSwitch);
    EXPECT_EQ(link_of_nvml_level(20), GpuLink::PcieSwitches);
    EXPECT_EQ(link_of_nvml_level(30), GpuLink::HostBridge);
    EXPECT_EQ(link_of_nvml_level(40), GpuLink::NumaNode);
    EXPECT_EQ(link_of_nvml_level(50), GpuLink::CrossSocket);
    EXPECT_EQ(link_of_nvml_level(7), GpuLink::Unknown);
}

// Four PCIe GPUs on two sockets, CUDA refusing peer access across them.
Topology two_socket_box() {
    Topology t;
    t.source = "NVML and CUDA";
    for (int i = 0; i < 4; ++i)
        t.gpus.push_back(
            {i, "NVIDIA RTX PRO 6000", "0000:" + std::to_string(i + 1) + "1:00.0", i / 2});
    const GpuLink X = GpuLink::Same, P = GpuLink::PcieSwitch, S = GpuLink::CrossSocket;
    t.links = {X, P, S, S, P, X, S, S, S, S, X, P, S, S, P, X};
    t.peer.assign(16, PeerAccess::Yes);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (i / 2 != j / 2) t.peer[i * 4 + j] = PeerAccess::No;
    return t;
}

TEST(Topology, PrintsAMatrixWithNumaBusAndLegend) {
    const std::vector<std::string> lines = topology_lines(two_socket_box());
    ASSERT_EQ(lines.size(), 7u);
    EXPECT_EQ(lines[0], "GPU topology (NVML and CUDA):");
    EXPECT_EQ(lines[1], "         GPU0  GPU1  GPU2  GPU3  NUMA  PCI bus       name");
    EXPECT_EQ(lines[2], "  GPU0      X   PIX  SYS*  SYS*     0  0000:11:00.0  NVIDIA RTX PRO 6000");
    EXPECT_EQ(lines[5], "  GPU3   SYS*  SYS*   PIX     X     1  0000:41:00.0  NVIDIA RTX PRO 6000");
    EXPECT_EQ(lines[6], "  PIX one PCIe switch, SYS across CPU sockets; * no CUDA peer access");
}

TEST(Topology, PrintsWhatIsUnknownAndWhy) {
    Topology t;
    t.source = "NVML";
    t.gpus = {{0, "NVIDIA H200", "", -1}, {1, "NVIDIA H200", "0000:22:00.0", -1}};
    t.links = {GpuLink::Same, GpuLink::NvLink, GpuLink::Unknown, GpuLink::Same};
    t.note = "NVML does not know GPU 0 (no bus id)";
    const std::vector<std::string> lines = topology_lines(t);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines[2], "  GPU0      X    NV     -  ?             NVIDIA H200");
    EXPECT_EQ(lines[3], "  GPU1      ?     X     -  0000:22:00.0  NVIDIA H200");
    EXPECT_EQ(lines[4], "  NV NVLink, ? not known; CUDA peer access not asked");
    EXPECT_EQ(lines[5], "  note: NVML does not know GPU 0 (no bus id)");
    t.gpus.clear();
    t.note = "libnvidia-ml.so.1 could not be loaded";
    EXPECT_EQ(
        topology_lines(t),
        std::vector<std::string>{"GPU topology: no GPUs: libnvidia-ml.so.1 could not be loaded"});
}

}  // namespace
}  // namespace myriad
