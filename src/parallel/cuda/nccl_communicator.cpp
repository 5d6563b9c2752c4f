#include "parallel/cuda/nccl_communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>

#include "parallel/cuda/cuda_topology.h"
#include "parallel/cuda/device_check.h"
#include "parallel/nccl_env.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cuda {

NcclCommGroup::NcclCommGroup(const nccl::Library& nccl, std::vector<int> devices,
                             std::vector<nccl::Comm> comms)
    : nccl_(nccl),
      devices_(std::move(devices)),
      comms_(std::move(comms)),
      barrier_(static_cast<int>(devices_.size()), collective_timeout()) {}

NcclCommGroup::~NcclCommGroup() {
    int current = 0;
    const bool restore = cudaGetDevice(&current) == cudaSuccess;
    for (size_t r = 0; r < comms_.size(); ++r) {
        if (!comms_[r]) continue;
        if (aborted_) continue;  // ncclCommAbort freed it
        // Work still queued on this GPU may use the communicator: let it finish first.
        if (cudaSetDevice(devices_[r]) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
            cudaGetLastError();
            log::warn(
                "NCCL teardown: GPU {} (rank {}) did not finish its work; aborting its "
                "communicator",
                devices_[r], r);
            nccl_.comm_abort(comms_[r]);
            continue;
        }
        if (nccl::Result e = nccl_.comm_destroy(comms_[r]); e != nccl::kSuccess)
            log::warn("NCCL teardown of rank {} (GPU {}): {}", r, devices_[r], nccl_.error(e));
    }
    if (restore) cudaSetDevice(current);
}

void NcclCommGroup::abort(const std::string& why) {
    barrier_.abort(why);
    if (aborted_) return;
    aborted_ = true;
    for (nccl::Comm c : comms_)
        if (c) nccl_.comm_abort(c);
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<NcclCommGroup> group, int rank,
                                   cudaStream_t stream)
    : group_(std::move(group)), rank_(rank), stream_(stream) {
    MYRIAD_CHECK(rank >= 0 && rank < group_->world(), "rank {} outside world {}", rank,
                 group_->world());
    device_ = group_->device(rank);
}

void NcclCommunicator::check(nccl::Result r, const char* op) const {
    if (r != nccl::kSuccess)
        internal_error("NCCL {} failed on rank {} (GPU {}): {}", op, rank_, device_,
                       group_->library().error(r, group_->comm(rank_)));
}

void NcclCommunicator::all_reduce_sum(Tensor t) {
    MYRIAD_CHECK(t.dtype == DType::F32, "all_reduce_sum supports F32, got {}", dtype_name(t.dtype));
    if (t.numel() == 0) return;
    comm_check(cudaSetDevice(device_), "all_reduce_sum");
    check(group_->library().all_reduce(t.data, t.data, static_cast<size_t>(t.numel()),
                                       nccl::DataType::Float32, nccl::RedOp::Sum,
                                       group_->comm(rank_), stream_),
          "all_reduce_sum");
}

void NcclCommunicator::all_gather(Tensor in, Tensor out) {
    count_gathered(out);
    const size_t bytes = in.nbytes();
    MYRIAD_CHECK(out.nbytes() == bytes * static_cast<size_t>(world()),
                 "all_gather: output holds {} bytes, need {}", out.nbytes(), bytes * world());
    if (bytes == 0) return;
    comm_check(cudaSetDevice(device_), "all_gather");
    check(group_->library().all_gather(in.data, out.data, bytes, nccl::DataType::Uint8,
                                       group_->comm(rank_), stream_),
          "all_gather");
}

NcclCommunicator::~NcclCommunicator() {
    if (gather_) {
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        cudaFree(gather_);
    }
}

void NcclCommunicator::all_gather_columns(Tensor in, Tensor out) {
    count_gathered(out);
    const int64_t rows = in.dim(0), cols = in.numel() / std::max<int64_t>(rows, 1);
    const size_t bytes = in.nbytes();
    MYRIAD_CHECK(out.nbytes() == bytes * world(),
                 "all_gather_columns: output holds {} bytes, need {}", out.nbytes(),
                 bytes * world());
    comm_check(cudaSetDevice(device_), "all_gather_columns");
    if (gather_bytes_ < bytes * world()) {
        if (gather_) {
            comm_check(cudaStreamSynchronize(stream_), "all_gather_columns");
            cudaFree(gather_);
        }
        gather_ = nullptr;
        gather_bytes_ = 0;
        comm_check(cudaMalloc(&gather_, bytes * world()), "all_gather_columns buffer");
        gather_bytes_ = bytes * world();
    }
    check(group_->library().all_gather(in.data, gather_, bytes, nccl::DataType::Uint8,
                                       group_->comm(rank_), stream_),
          "all_gather_columns");
    const size_t row = static_cast<size_t>(cols) * sizeof(float);
    for (int r = 0; r < world(); ++r)
        comm_check(cudaMemcpy2DAsync(static_cast<uint8_t*>(out.data) + r * row, row * world(),
                                     static_cast<const uint8_t*>(gather_) + r * bytes, row, row,
                                     static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, stream_),
                   "all_gather_columns");
}

void NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
    MYRIAD_CHECK(root >= 0 && root < world(), "broadcast: root {} outside world {}", root, world());
    if (bytes == 0) return;
    comm_check(cudaSetDevice(device_), "broadcast");
    check(group_->library().broadcast(data, data, bytes, nccl::DataType::Uint8, root,
                                      group_->comm(rank_), stream_),
          "broadcast");
}

std::shared_ptr<NcclCommGroup> make_nccl_comm_group(const std::vector<int>& devices,
                                                    std::string* why) {
    auto fail = [&](std::string reason) {
        if (why) *why = std::move(reason);
        return nullptr;
    };
    if (devices.empty()) return fail("NCCL: no GPUs given");
    for (size_t r = 0; r < devices.size(); ++r)
        for (size_t s = 0; s < r; ++s)
            if (devices[s] == devices[r])
                return fail(fmt::format(
                    "NCCL takes one rank per GPU, and GPU {} holds ranks {} and {} (--devices "
                    "{}); ranks that share a GPU reduce through device buffers",
                    devices[r], s, r, fmt::join(devices, ",")));
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
        cudaGetLastError();
        return fail(fmt::format("NCCL: no usable CUDA device: {}", cudaGetErrorString(e)));
    }
    for (int d : devices)
        if (d < 0 || d >= count)
            return fail(fmt::format("NCCL: GPU {} requested but {} found", d, count));
    std::string missing;
    const nccl::Library* nccl = nccl::library(&missing);
    if (!nccl) return fail(missing);

    // Before NCCL initialises: it reads its variables once.
    const NcclEnvChoice env =
        choose_nccl_env(summarize_for_nccl(probe_cuda_topology(devices)), nccl_user_environment());
    apply_nccl_env(env);
    log::info("{}", env.line);

    int current = 0;
    const bool restore = cudaGetDevice(&current) == cudaSuccess;
    std::vector<nccl::Comm> comms(devices.size(), nullptr);
    const nccl::Result r =
        nccl->comm_init_all(comms.data(), static_cast<int>(devices.size()), devices.data());
    if (restore) cudaSetDevice(current);
    if (r != nccl::kSuccess)
        return fail(fmt::format("NCCL {} ({}) could not set up GPUs {}: {}", nccl->version_string(),
                                nccl->path, fmt::join(devices, ","), nccl->error(r)));
    log::info("NCCL {} ({}): {} rank(s) on GPUs {}", nccl->version_string(), nccl->path,
              devices.size(), fmt::join(devices, ","));
    return std::make_shared<NcclCommGroup>(*nccl, devices, std::move(comms));
}

}  // namespace myriad::cuda
