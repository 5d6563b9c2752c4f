#include "ops/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "parallel/cuda/device_communicator.h"
#include "parallel/cuda/modelled_gpu_communicator.h"
#include "parallel/cuda/nccl_communicator.h"
#include "parallel/cuda/single_gpu_communicator.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cuda {

// cudart is linked statically and loads the driver (libcuda.so.1) itself on first use: without
// a driver or a GPU this reports the reason instead of failing to start.
int device_count(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (why) *why = fmt::format("no usable CUDA device: {}", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0 && why) *why = "no CUDA device found";
    return n;
}

bool device_info(int index, std::string* name, int* cc, uint64_t* memory, int* sms) {
    if (index < 0 || index >= device_count(nullptr)) return false;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    *name = prop.name;
    *cc = prop.major * 10 + prop.minor;
    if (memory) *memory = prop.totalGlobalMem;
    if (sms) *sms = prop.multiProcessorCount;
    return true;
}

bool memory_in_use(int index, uint64_t* used) {
    if (index < 0 || index >= device_count(nullptr)) return false;
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(index) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    size_t free = 0, total = 0;
    const bool ok = cudaMemGetInfo(&free, &total) == cudaSuccess;
    if (!ok) cudaGetLastError();
    cudaSetDevice(current);
    if (ok) *used = total - free;
    return ok;
}

std::unique_ptr<Ops> make_ops(int index, const KernelChoices& choices, bool graphs) {
    std::string why;
    const int n = device_count(&why);
    if (n == 0) bad_input("--device cuda: {}; use --device cpu", why);
    if (index < 0 || index >= n)
        bad_input("--device cuda: GPU {} requested but {} found", index, n);
    auto ops = std::make_unique<CudaOps>(index, choices);
    if (!graphs) ops->disable_graphs();
    return ops;
}

// cudaMemcpy device to device of 2 GiB (several times the L2), timed with events: median of 9.
double copy_bandwidth(int index) {
    check_cuda(cudaSetDevice(index), "cudaSetDevice");
    const size_t bytes = size_t{2} << 30;
    DeviceBuffer a(bytes), b(bytes);
    check_cuda(cudaMemset(a.data(), 1, bytes), "copy bandwidth");
    cudaEvent_t start, stop;
    check_cuda(cudaEventCreate(&start), "copy bandwidth");
    check_cuda(cudaEventCreate(&stop), "copy bandwidth");
    std::vector<float> ms;
    for (int i = 0; i < 11; ++i) {
        check_cuda(cudaEventRecord(start), "copy bandwidth");
        check_cuda(cudaMemcpy(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice),
                   "copy bandwidth");
        check_cuda(cudaEventRecord(stop), "copy bandwidth");
        check_cuda(cudaEventSynchronize(stop), "copy bandwidth");
        float t = 0;
        check_cuda(cudaEventElapsedTime(&t, start, stop), "copy bandwidth");
        if (i >= 2) ms.push_back(t);  // two warm-ups
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(ms.begin(), ms.end());
    return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3);
}

std::unique_ptr<Communicator> make_single_gpu_communicator() {
    return std::make_unique<SingleGpuCommunicator>();
}

std::shared_ptr<CommGroup> make_gpu_comm_group(const std::vector<int>& devices) {
    const int n = device_count(nullptr);
    for (int d : devices)
        if (d < 0 || d >= n) bad_input("--devices: GPU {} requested but {} found", d, n);
    // Distinct GPUs without peer access between some pair: NCCL (our kernels need to reach each
    // other's memory). Otherwise our kernels (ranks sharing a GPU: NCCL refuses them anyway).
    std::vector<int> sorted = devices;
    std::sort(sorted.begin(), sorted.end());
    const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    std::string no_peer;
    for (size_t i = 0; i < devices.size() && distinct && no_peer.empty(); ++i)
        for (size_t j = 0; j < devices.size() && no_peer.empty(); ++j) {
            int can = 1;
            if (i != j && cudaDeviceCanAccessPeer(&can, devices[i], devices[j]) == cudaSuccess &&
                !can)
                no_peer =
                    fmt::format("GPU {} cannot reach GPU {}'s memory", devices[i], devices[j]);
        }
    if (distinct && !no_peer.empty()) {
        std::string why;
        if (auto nccl = make_nccl_comm_group(devices, &why)) {
            log::info("collectives: NCCL ({}: no kernels over peer memory)", no_peer);
            return nccl;
        }
        log::info("collectives: {}, and NCCL is not usable ({})", no_peer, why);
    }
    return make_device_comm_group(devices);
}

std::unique_ptr<Communicator> make_modelled_gpu_communicator(int world, int rank, double wait_us,
                                                             Ops& ops) {
    auto* cuda = dynamic_cast<CudaOps*>(&ops);
    MYRIAD_CHECK(cuda, "a GPU communicator needs the CUDA backend");
    return std::make_unique<ModelledGpuCommunicator>(world, rank, wait_us, cuda->stream());
}

std::unique_ptr<Communicator> make_gpu_communicator(const std::shared_ptr<CommGroup>& group,
                                                    int rank, Ops& ops) {
    auto* cuda = dynamic_cast<CudaOps*>(&ops);
    MYRIAD_CHECK(cuda, "a GPU communicator needs the CUDA backend");
    if (auto nccl = std::dynamic_pointer_cast<NcclCommGroup>(group))
        return std::make_unique<NcclCommunicator>(std::move(nccl), rank, cuda->stream());
    auto g = std::dynamic_pointer_cast<DeviceCommGroup>(group);
    MYRIAD_CHECK(g, "a GPU communicator needs a GPU group");
    auto comm = std::make_unique<DeviceCommunicator>(std::move(g), rank, cuda->stream(),
                                                     /*bf16_wire=*/!cuda->choices().exact);
    // The collectives that wait on the host cannot be recorded: no graphs with them.
    if (!comm->graph_safe()) cuda->disable_graphs();
    return comm;
}

}  // namespace myriad::cuda
