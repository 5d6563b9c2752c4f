#include "ops/backend.h"

#include "util/error.h"

#ifdef MYRIAD_WITH_CUDA
#include "ops/cuda/cuda_backend.h"
#endif

namespace myriad {

Device resolve_device(const std::string& flag, int tp, std::string* note) {
    if (note) note->clear();
    if (flag == "cpu") return Device::Cpu;
    if (flag != "cuda" && flag != "auto") bad_input("--device {}: use auto, cpu or cuda", flag);
    std::string why;
    const int gpus = cuda_device_count(&why);
    if (flag == "cuda") {
        if (gpus == 0) bad_input("--device cuda: {}; use --device cpu", why);
        return Device::Cuda;
    }
    if (gpus == 0) return Device::Cpu;  // no GPU here: the CPU, silently
    if (tp != 1) {
        if (note)
            *note = fmt::format(
                "device: cpu (--tp {}: tensor parallelism across GPUs is not built yet; "
                "--tp 1 runs on the GPU)",
                tp);
        return Device::Cpu;
    }
    if (note) *note = "device: cuda (GPU 0; --device cpu for the CPU)";
    return Device::Cuda;
}

#ifdef MYRIAD_WITH_CUDA

bool cuda_backend_built() {
    return true;
}
int cuda_device_count(std::string* why) {
    return cuda::device_count(why);
}
std::unique_ptr<Ops> make_cuda_ops(int index) {
    return cuda::make_ops(index);
}
bool cuda_device_info(int index, GpuInfo* info) {
    return cuda::device_info(index, &info->name, &info->cc);
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
double cuda_copy_bandwidth(int index) {
    return cuda::copy_bandwidth(index);
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
std::unique_ptr<Ops> make_cuda_ops(int) {
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
double cuda_copy_bandwidth(int) {
    return 0.0;
}

#endif

}  // namespace myriad
