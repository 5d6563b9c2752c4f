#include "parallel/cuda/modelled_gpu_communicator.h"

#include <cstdint>

#include "parallel/cuda/device_check.h"

namespace myriad::cuda {

namespace {

__device__ __forceinline__ uint64_t global_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Holds the stream for `ns` nanoseconds of the GPU's global timer: the modelled collective.
__global__ void spin_kernel(uint64_t ns) {
    const uint64_t start = global_ns();
    while (global_ns() - start < ns) {
    }
}

}  // namespace

ModelledGpuCommunicator::ModelledGpuCommunicator(int world, int rank, double wait_us,
                                                 cudaStream_t stream)
    : ModelledCommunicator(world, rank, wait_us), stream_(stream) {}

void ModelledGpuCommunicator::wait() {
    if (wait_us() <= 0) return;
    spin_kernel<<<1, 1, 0, stream_>>>(static_cast<uint64_t>(wait_us() * 1e3));
    comm_check(cudaGetLastError(), "modelled collective");
}

void ModelledGpuCommunicator::place(Tensor in, Tensor out, bool columns) {
    const size_t world = static_cast<size_t>(this->world()), r = static_cast<size_t>(rank());
    auto* dst = static_cast<char*>(out.data);
    if (!columns) {
        comm_check(cudaMemcpyAsync(dst + in.nbytes() * r, in.data, in.nbytes(),
                                   cudaMemcpyDeviceToDevice, stream_),
                   "modelled gather");
        return;
    }
    const size_t row = in.nbytes() / static_cast<size_t>(in.dim(0));
    comm_check(cudaMemcpy2DAsync(dst + r * row, world * row, in.data, row, row,
                                 static_cast<size_t>(in.dim(0)), cudaMemcpyDeviceToDevice, stream_),
               "modelled gather");
}

}  // namespace myriad::cuda
