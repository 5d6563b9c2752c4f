#include "parallel/cuda/device_communicator.h"

#include <algorithm>
#include <cstdint>

#include "parallel/cuda/device_check.h"

namespace myriad::cuda {

namespace {
// Floats of each rank's input summed per round: the staging holds world of these.
constexpr int64_t kPiece = int64_t{1} << 20;
}  // namespace

DeviceCommGroup::DeviceCommGroup(std::vector<int> devices)
    : devices_(std::move(devices)),
      barrier_(static_cast<int>(devices_.size()), collective_timeout()),
      slots_(devices_.size(), nullptr) {}

DeviceCommunicator::DeviceCommunicator(std::shared_ptr<DeviceCommGroup> group, int rank,
                                       cudaStream_t stream)
    : group_(std::move(group)), rank_(rank), stream_(stream) {
    MYRIAD_CHECK(rank >= 0 && rank < group_->world(), "rank {} outside world {}", rank,
                 group_->world());
    device_ = group_->devices_[static_cast<size_t>(rank)];
}

DeviceCommunicator::~DeviceCommunicator() {
    cudaSetDevice(device_);
    if (staging_) cudaFree(staging_);
    if (result_) cudaFree(result_);
}

void DeviceCommunicator::sync(const char* op) {
    comm_check(cudaStreamSynchronize(stream_), op);
}

void* DeviceCommunicator::ensure(void*& buf, size_t& size, size_t bytes, const char* what) {
    if (size >= bytes) return buf;
    if (buf) comm_check(cudaFree(buf), what);
    buf = nullptr;
    size = 0;
    comm_check(cudaMalloc(&buf, bytes), what);
    size = bytes;
    return buf;
}

void DeviceCommunicator::all_reduce_sum(Tensor t) {
    MYRIAD_CHECK(t.dtype == DType::F32, "all_reduce_sum supports F32, got {}",
                 dtype_name(t.dtype));
    const int world = group_->world();
    if (world == 1) return;
    comm_check(cudaSetDevice(device_), "all_reduce_sum");
    const int64_t n = t.numel();
    const int64_t piece = std::min(n, kPiece);
    auto* staging = static_cast<float*>(
        ensure(staging_, staging_bytes_, sizeof(float) * world * std::max<int64_t>(piece, 1),
               "all_reduce_sum staging"));
    auto* result = static_cast<float*>(
        ensure(result_, result_bytes_, sizeof(float) * std::max<int64_t>(n, 1),
               "all_reduce_sum result"));
    sync("all_reduce_sum: this rank's input");
    auto& g = *group_;
    g.slots_[static_cast<size_t>(rank_)] = t.data;
    wait("all_reduce_sum");  // every rank's input is posted and complete
    for (int64_t begin = 0; begin < n; begin += piece) {
        const int64_t len = std::min(piece, n - begin);
        for (int r = 0; r < world; ++r)
            comm_check(cudaMemcpyPeerAsync(staging + r * piece, device_,
                                           static_cast<const float*>(g.slots_[r]) + begin,
                                           g.devices_[static_cast<size_t>(r)],
                                           sizeof(float) * len, stream_),
                       "all_reduce_sum copy");
        sum_ranks(staging, world, len, piece, result + begin, stream_);
        comm_check(cudaGetLastError(), "all_reduce_sum kernel");
    }
    sync("all_reduce_sum");
    wait("all_reduce_sum");  // every rank has read every input: each may overwrite its own
    comm_check(cudaMemcpyAsync(t.data, result, sizeof(float) * n, cudaMemcpyDeviceToDevice,
                               stream_),
               "all_reduce_sum result");
}

void DeviceCommunicator::all_gather(Tensor in, Tensor out) {
    const int world = group_->world();
    const size_t bytes = in.nbytes();
    MYRIAD_CHECK(out.nbytes() == bytes * world, "all_gather: output holds {} bytes, need {}",
                 out.nbytes(), bytes * world);
    comm_check(cudaSetDevice(device_), "all_gather");
    sync("all_gather: this rank's input");
    auto& g = *group_;
    g.slots_[static_cast<size_t>(rank_)] = in.data;
    wait("all_gather");
    for (int r = 0; r < world; ++r)
        comm_check(cudaMemcpyPeerAsync(static_cast<uint8_t*>(out.data) + bytes * r, device_,
                                       g.slots_[r], g.devices_[static_cast<size_t>(r)], bytes,
                                       stream_),
                   "all_gather copy");
    sync("all_gather");
    wait("all_gather");
}

void DeviceCommunicator::broadcast(void* data, size_t bytes, int root) {
    comm_check(cudaSetDevice(device_), "broadcast");
    sync("broadcast: this rank's input");
    auto& g = *group_;
    if (rank_ == root) g.slots_[static_cast<size_t>(root)] = data;
    wait("broadcast");
    if (rank_ != root)
        comm_check(cudaMemcpyPeerAsync(data, device_, g.slots_[static_cast<size_t>(root)],
                                       g.devices_[static_cast<size_t>(root)], bytes, stream_),
                   "broadcast copy");
    sync("broadcast");
    wait("broadcast");
}

}  // namespace myriad::cuda
