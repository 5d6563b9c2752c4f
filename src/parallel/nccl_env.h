// The NCCL variables myriad sets before NCCL initialises, chosen from the topology, printed in one
// line. Any NCCL_* the user set wins and is named in the line.
//
//   NCCL_NVLS_ENABLE=0   always: NVLink multicast (NVLS) can take a shared machine's GPUs out of
//                        service; myriad never uses multicast objects itself.
//   on PCIe (some pair of the GPUs without NVLink), multigpu.md §2:
//   NCCL_P2P_LEVEL=SYS   peer-to-peer over every PCIe path, across sockets too (NCCL rates AMD
//                        host bridges low and stages through host memory); only where CUDA grants
//                        peer access between every pair: P2P that is not there hangs NCCL.
//   NCCL_PROTO=LL        the low-latency protocol: decode all-reduces are small and latency-bound
//                        (32 KB 48 -> 26 us measured); never LL128 off NVLink (silent corruption).
//   NCCL_MIN_NCHANNELS=8 NCCL picks 2 channels on such boxes (32 MB bus bandwidth 22 -> 38 GB/s).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "parallel/topology.h"

namespace myriad {

// What the choice depends on.
struct NcclTopologySummary {
    int gpus = 0;
    bool links_known = false;      // NVML told the link of every pair
    bool all_nvlink = false;       // NVLink between every pair
    bool peer_known = false;       // CUDA peer access was asked
    bool peer_everywhere = false;  // ... and granted between every pair
    bool cross_socket = false;     // some pair crosses CPU sockets (NUMA nodes)
};
NcclTopologySummary summarize_for_nccl(const Topology& t);

struct NcclEnvChoice {
    std::vector<std::pair<std::string, std::string>> set;  // to set, none of them the user's
    std::string line;  // "NCCL: NCCL_NVLS_ENABLE=0 ... (why); yours, kept: NCCL_X=y"
};

// Pure: the variables to set for `topo`, given the NCCL_* the user set (`user`).
NcclEnvChoice choose_nccl_env(const NcclTopologySummary& topo,
                              const std::map<std::string, std::string>& user);

// The NCCL_* variables of this process's environment that the user set (those that
// apply_nccl_env set, still holding its values, are left out).
std::map<std::string, std::string> nccl_user_environment();

// Sets `choice.set` in the environment (a variable already set is left alone). Before the first
// communicator: NCCL reads its variables once.
void apply_nccl_env(const NcclEnvChoice& choice);

}  // namespace myriad
