// The NCCL variables chosen from the topology (parallel/nccl_env.h): multicast always off unless
// the user set it, the PCIe settings only on PCIe, P2P level only where peer access is there,
// and the user's NCCL_* kept and named in the one line.
#include "parallel/nccl_env.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace myriad {
namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

NcclTopologySummary pcie(int gpus, bool peer) {
    NcclTopologySummary s;
    s.gpus = gpus;
    s.links_known = true;
    s.peer_known = true;
    s.peer_everywhere = peer;
    return s;
}

TEST(NcclEnv, OneGpuOnlyTurnsMulticastOff) {
    NcclTopologySummary s;
    s.gpus = 1;
    s.links_known = true;
    const NcclEnvChoice c = choose_nccl_env(s, {});
    EXPECT_EQ(c.set, (Vars{{"NCCL_NVLS_ENABLE", "0"}}));
    EXPECT_EQ(c.line.rfind("NCCL: NCCL_NVLS_ENABLE=0 (", 0), 0u) << c.line;
    EXPECT_NE(c.line.find("multicast"), std::string::npos) << c.line;
}

TEST(NcclEnv, NvlinkEverywhereKeepsNcclDefaults) {
    NcclTopologySummary s;
    s.gpus = 8;
    s.links_known = s.all_nvlink = s.peer_known = s.peer_everywhere = true;
    const NcclEnvChoice c = choose_nccl_env(s, {});
    EXPECT_EQ(c.set, (Vars{{"NCCL_NVLS_ENABLE", "0"}}));
    EXPECT_NE(c.line.find("NVLink between every pair"), std::string::npos) << c.line;
}

TEST(NcclEnv, PcieWithPeerAccessGetsTheMeasuredSettings) {
    const NcclEnvChoice c = choose_nccl_env(pcie(8, true), {});
    EXPECT_EQ(c.set, (Vars{{"NCCL_NVLS_ENABLE", "0"},
                           {"NCCL_P2P_LEVEL", "SYS"},
                           {"NCCL_PROTO", "LL"},
                           {"NCCL_MIN_NCHANNELS", "8"}}));
    EXPECT_EQ(c.line.find('\n'), std::string::npos);
    EXPECT_EQ(c.line.rfind("NCCL: NCCL_NVLS_ENABLE=0 NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL "
                           "NCCL_MIN_NCHANNELS=8 (PCIe",
                           0),
              0u)
        << c.line;
}

TEST(NcclEnv, MissingOrUnknownPeerAccessLeavesP2pLevelToNccl) {
    for (bool known : {true, false}) {
        NcclTopologySummary s = pcie(4, false);
        s.peer_known = known;
        const NcclEnvChoice c = choose_nccl_env(s, {});
        for (const auto& [name, value] : c.set) EXPECT_NE(name, "NCCL_P2P_LEVEL") << value;
        EXPECT_EQ(c.set.size(), 3u);
        EXPECT_NE(c.line.find("NCCL_P2P_LEVEL left to NCCL"), std::string::npos) << c.line;
    }
}

TEST(NcclEnv, UnknownLinksSetNothingButMulticast) {
    NcclTopologySummary s = pcie(2, true);
    s.links_known = false;
    const NcclEnvChoice c = choose_nccl_env(s, {});
    EXPECT_EQ(c.set, (Vars{{"NCCL_NVLS_ENABLE", "0"}}));
    EXPECT_NE(c.line.find("not known"), std::string::npos) << c.line;
}

TEST(NcclEnv, TheUsersVariablesWinAndAreNamed) {
    const NcclEnvChoice c = choose_nccl_env(
        pcie(8, true),
        {{"NCCL_PROTO", "Simple"}, {"NCCL_NVLS_ENABLE", "1"}, {"NCCL_DEBUG", "INFO"}});
    EXPECT_EQ(c.set, (Vars{{"NCCL_P2P_LEVEL", "SYS"}, {"NCCL_MIN_NCHANNELS", "8"}}));
    EXPECT_NE(c.line.find("yours, kept: NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=1 NCCL_PROTO=Simple"),
              std::string::npos)
        << c.line;
    EXPECT_EQ(c.line.find("NCCL_PROTO=LL"), std::string::npos) << c.line;
}

TEST(NcclEnv, SummaryOfATopology) {
    Topology t;
    t.gpus.resize(3);
    t.gpus[0].numa_node = 0;
    t.gpus[1].numa_node = 0;
    t.gpus[2].numa_node = 1;
    const GpuLink S = GpuLink::Same, N = GpuLink::NvLink, P = GpuLink::HostBridge;
    t.links = {S, N, P, N, S, P, P, P, S};
    NcclTopologySummary s = summarize_for_nccl(t);
    EXPECT_EQ(s.gpus, 3);
    EXPECT_TRUE(s.links_known);
    EXPECT_FALSE(s.all_nvlink);
    EXPECT_FALSE(s.peer_known);
    EXPECT_FALSE(s.peer_everywhere);
    EXPECT_TRUE(s.cross_socket);  // GPU 2 sits on another NUMA node
    t.peer.assign(9, PeerAccess::Yes);
    t.links = {S, N, N, N, S, N, N, N, S};
    s = summarize_for_nccl(t);
    EXPECT_TRUE(s.all_nvlink);
    EXPECT_TRUE(s.peer_everywhere);
    t.peer[5] = PeerAccess::No;
    t.links[1] = GpuLink::Unknown;
    s = summarize_for_nccl(t);
    EXPECT_TRUE(s.peer_known);
    EXPECT_FALSE(s.peer_everywhere);
    EXPECT_FALSE(s.links_known);
}

// Applying never overwrites, and what myriad set is not taken for the user's afterwards.
TEST(NcclEnv, ApplyKeepsSetVariablesAndRemembersItsOwn) {
    unsetenv("NCCL_MIN_NCHANNELS");
    setenv("NCCL_PROTO", "Simple", 1);
    NcclEnvChoice c;
    c.set = {{"NCCL_MIN_NCHANNELS", "8"}, {"NCCL_PROTO", "LL"}};
    apply_nccl_env(c);
    EXPECT_STREQ(std::getenv("NCCL_MIN_NCHANNELS"), "8");
    EXPECT_STREQ(std::getenv("NCCL_PROTO"), "Simple");
    const auto user = nccl_user_environment();
    EXPECT_EQ(user.count("NCCL_MIN_NCHANNELS"), 0u);
    EXPECT_EQ(user.at("NCCL_PROTO"), "Simple");
    setenv("NCCL_MIN_NCHANNELS", "4", 1);  // changed by someone else: theirs now
    EXPECT_EQ(nccl_user_environment().at("NCCL_MIN_NCHANNELS"), "4");
    unsetenv("NCCL_MIN_NCHANNELS");
    unsetenv("NCCL_PROTO");
}

}  // namespace
}  // namespace myriad
