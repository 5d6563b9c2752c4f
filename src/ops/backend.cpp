#include "ops/backend.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/ranges.h>

#include "util/error.h"

#ifdef MYRIAD_WITH_CUDA
#include "ops/cuda/cuda_backend.h"
#include "parallel/cuda/cuda_topology.h"
#else
#include "parallel/topology_probe.h"
#endif

namespace myriad {

Device resolve_device(const std::string& flag, int tp, std::string* note,
                      const std::string& devices) {
    if (note) note->clear();
    if (flag == "cpu") return Device::Cpu;
    if (flag != "cuda" && flag != "auto") bad_input("--device {}: use auto, cpu or cuda", flag);
    std::string why;
    const int gpus = cuda_device_count(&why);
    const char* env = std::getenv("MYRIAD_CUDA_DEVICES");
    const bool placed = !devices.empty() || (env && *env);
    if (flag == "cuda") {
        if (gpus == 0) bad_input("--device cuda: {}; use --device cpu", why);
        if (!placed && tp > gpus)
            bad_input(
                "--tp {} with --device cuda: {} GPU(s) found; --devices places ranks on "
                "them, several on one allowed (e.g. --devices {})",
                tp, gpus, fmt::format("{}", fmt::join(std::vector<int>(tp, 0), ",")));
        return Device::Cuda;
    }
    if (gpus == 0) return Device::Cpu;  // no GPU here: the CPU, silently
    if (!placed && tp > gpus) {
        if (note)
            *note = fmt::format(
                "device: cpu (--tp {} needs {} GPUs, {} found; --devices places several ranks "
                "on one GPU)",
                tp, tp, gpus);
        return Device::Cpu;
    }
    if (note)
        *note = tp == 1 ? "device: cuda (GPU 0; --device cpu for the CPU)"
                        : fmt::format(
                              "device: cuda ({} ranks; --devices places them, --device "
                              "cpu for the CPU)",
                              tp);
    return Device::Cuda;
}

std::vector<int> parse_devices(const std::string& flag, int tp) {
    std::string list = flag;
    const char* what = "--devices";
    if (list.empty()) {
        const char* env = std::getenv("MYRIAD_CUDA_DEVICES");
        if (env && *env) {
            list = env;
            what = "MYRIAD_CUDA_DEVICES";
        }
    }
    std::vector<int> out;
    if (list.empty()) {
        for (int r = 0; r < tp; ++r) out.push_back(r);
        return out;
    }
    size_t i = 0;
    while (i <= list.size()) {
        const size_t j = std::min(list.find(',', i), list.size());
        const std::string one = list.substr(i, j - i);
        char* end = nullptr;
        const long v = one.empty() ? -1 : std::strtol(one.c_str(), &end, 10);
        if (one.empty() || *end != '\0' || v < 0 || v > 1023)
            bad_input("{} {}: expected GPU indices separated by commas, e.g. 0,1 or 0,0,0,0", what,
                      list);
        out.push_back(static_cast<int>(v));
        i = j + 1;
    }
    if (static_cast<int>(out.size()) != tp)
        bad_input("{} {}: names {} GPU(s) for --tp {}; give one per rank (repeats allowed)", what,
                  list, out.size(), tp);
    return out;
}

#ifdef MYRIAD_WITH_CUDA

bool cuda_backend_built() {
    return true;
}
int cuda_device_count(std::string* why) {
    return cuda::device_count(why);
}
std::unique_ptr<Ops> make_cuda_ops(int index, const KernelChoices& choices, bool graphs) {
    return cuda::make_ops(index, choices, graphs);
}
bool cuda_device_info(int index, GpuInfo* info) {
    info->index = index;
    return cuda::device_info(index, &info->name, &info->cc, &info->memory, &info->sms);
}
std::vector<std::string> cuda_built_architectures() {
    std::vector<std::string> out;
    std::string all = MYRIAD_CUDA_ARCHS, one;
    for (char c : all + ",") {
        if (c != ',') {
            one += c;
        } else if (!one.empty()) {
            out.push_back(one);
            one.clear();
        }
    }
    return out;
}
std::unique_ptr<Communicator> make_single_gpu_communicator() {
    return cuda::make_single_gpu_communicator();
}
std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>& devices) {
    return cuda::make_gpu_comm_group(devices);
}
std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>& group,
                                                    int rank, Ops& ops) {
    return cuda::make_gpu_communicator(group, rank, ops);
}
std::unique_ptr<Communicator> make_modelled_gpu_communicator(int world, int rank, double wait_us,
                                                             Ops& ops) {
    return cuda::make_modelled_gpu_communicator(world, rank, wait_us, ops);
}
double cuda_copy_bandwidth(int index) {
    return cuda::copy_bandwidth(index);
}
double cuda_graph_capture_seconds() {
    return cuda::graph_capture_seconds_total();
}
bool cuda_memory_in_use(int index, uint64_t* used) {
    return cuda::memory_in_use(index, used);
}
Topology gpu_topology() {
    return cuda::probe_cuda_topology();
}

#else

namespace {
constexpr const char* kNoCuda =
    "this myriad was built without the CUDA backend (no nvcc at configure time); rebuild with "
    "the CUDA toolkit installed (cmake -DMYRIAD_CUDA=ON) or use --device cpu";
}

bool cuda_backend_built() {
    return false;
}
int cuda_device_count(std::string* why) {
    if (why) *why = kNoCuda;
    return 0;
}
std::unique_ptr<Ops> make_cuda_ops(int, const KernelChoices&, bool) {
    bad_input("--device cuda: {}", kNoCuda);
}
bool cuda_device_info(int, GpuInfo*) {
    return false;
}
std::vector<std::string> cuda_built_architectures() {
    return {};
}
std::unique_ptr<Communicator> make_single_gpu_communicator() {
    bad_input("--device cuda: {}", kNoCuda);
}
std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>&) {
    bad_input("--device cuda: {}", kNoCuda);
}
std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>&, int, Ops&) {
    bad_input("--device cuda: {}", kNoCuda);
}
std::unique_ptr<Communicator> make_modelled_gpu_communicator(int, int, double, Ops&) {
    bad_input("--device cuda: {}", kNoCuda);
}
double cuda_copy_bandwidth(int) {
    return 0.0;
}
double cuda_graph_capture_seconds() {
    return 0.0;
}
bool cuda_memory_in_use(int, uint64_t*) {
    return false;
}
Topology gpu_topology() {
    return probe_topology();
}

#endif

}  // namespace myriad
