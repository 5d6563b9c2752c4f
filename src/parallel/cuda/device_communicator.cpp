#include "parallel/cuda/device_communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "parallel/cuda/device_check.h"
#include "util/log.h"

namespace myriad::cuda {

namespace {
// Floats of each rank's input summed per round of the host path: the staging holds world of these.
constexpr int64_t kPiece = int64_t{1} << 20;
// The kernels' buffers per rank and parity: 4 MiB of inputs, 2 Mi floats of two-shot sums, so a
// round carries up to 2 Mi elements (8 MB of F32) in BF16, 1 Mi in F32.
constexpr size_t kDataBytes = size_t{4} << 20;
constexpr size_t kSumFloats = size_t{2} << 20;
// A flag wait on the device gives up after this (or MYRIAD_COLLECTIVE_TIMEOUT, if shorter).
constexpr double kFlagBoundSeconds = 10.0;

template <class T>
void alloc(T** p, size_t bytes, const char* what) {
    comm_check(cudaMalloc(reinterpret_cast<void**>(p), bytes), what);
}

uint32_t probe_value(int rank) {
    return 0x6d790000u + static_cast<uint32_t>(rank);
}

std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

std::string kib(size_t bytes) {
    return bytes >= (size_t{1} << 20) ? fmt::format("{} MiB", bytes >> 20)
                                      : fmt::format("{} KiB", bytes >> 10);
}

// Message sizes (bytes of F32) at which the two algorithms are timed at start.
constexpr size_t kMeasured[] = {size_t{16} << 10, size_t{64} << 10, size_t{256} << 10,
                                size_t{1} << 20, size_t{4} << 20};
}  // namespace

DeviceCommGroup::DeviceCommGroup(std::vector<int> devices, std::shared_ptr<NcclCommGroup> nccl,
                                 std::string nccl_why)
    : devices_(std::move(devices)),
      nccl_(std::move(nccl)),
      nccl_why_(nccl_ ? "" : std::move(nccl_why)),
      barrier_(static_cast<int>(devices_.size()), collective_timeout()),
      slots_(devices_.size(), nullptr),
      data_(devices_.size(), nullptr),
      sums_(devices_.size(), nullptr),
      flags_(devices_.size(), nullptr),
      probes_(devices_.size(), nullptr),
      problems_(devices_.size()) {}

void DeviceCommGroup::abort(const std::string& why) {
    barrier_.abort(why);
    if (nccl_) nccl_->abort(why);
}

std::string DeviceCommGroup::measured_all_reduce() const {
    if (!choice_.peer) return "copies through the host: " + choice_.why_not;
    return (nccl_ ? "one-shot/two-shot/NCCL us: " : "one-shot/two-shot us: ") + choice_.measured;
}

CommGroup::AllReduceEstimate DeviceCommGroup::all_reduce_estimate(size_t bytes) const {
    if (!choice_.peer || timings_.empty()) return {};
    const int algo = bytes >= choice_.nccl_from ? 2 : bytes >= choice_.two_shot_from ? 1 : 0;
    static const char* const kNames[] = {"one-shot", "two-shot", "NCCL"};
    // Linear in the bytes between the measured sizes; the end's time outside them.
    const size_t n = timed_bytes_.size();
    double us = timings_[0][algo];
    if (bytes >= timed_bytes_[n - 1]) {
        us = timings_[n - 1][algo] * static_cast<double>(bytes) /
             static_cast<double>(timed_bytes_[n - 1]);
    } else {
        for (size_t i = 0; i + 1 < n; ++i)
            if (bytes >= timed_bytes_[i] && bytes < timed_bytes_[i + 1]) {
                const double f = static_cast<double>(bytes - timed_bytes_[i]) /
                                 static_cast<double>(timed_bytes_[i + 1] - timed_bytes_[i]);
                us = timings_[i][algo] + f * (timings_[i + 1][algo] - timings_[i][algo]);
            }
    }
    return {kNames[algo], us};
}

std::map<size_t, int64_t> DeviceCommGroup::all_reduce_counts() const {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    return counts_;
}

std::shared_ptr<DeviceCommGroup> make_device_comm_group(const std::vector<int>& devices) {
    std::string why = "one rank";
    std::shared_ptr<NcclCommGroup> nccl;
    if (env_or("MYRIAD_NCCL", "1") == "0")
        why = "MYRIAD_NCCL=0";
    else if (devices.size() > 1)
        nccl = make_nccl_comm_group(devices, &why);
    return std::make_shared<DeviceCommGroup>(devices, std::move(nccl), why);
}

DeviceCommunicator::DeviceCommunicator(std::shared_ptr<DeviceCommGroup> group, int rank,
                                       cudaStream_t stream, bool bf16_wire)
    : group_(std::move(group)), rank_(rank), stream_(stream), bf16_wire_(bf16_wire) {
    MYRIAD_CHECK(rank >= 0 && rank < group_->world(), "rank {} outside world {}", rank,
                 group_->world());
    MYRIAD_CHECK(group_->world() <= kPeerMaxRanks, "{} ranks: at most {} in one process",
                 group_->world(), kPeerMaxRanks);
    device_ = group_->devices_[static_cast<size_t>(rank)];
    for (size_t i = 0; i < group_->devices_.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            shared_gpu_ = shared_gpu_ || group_->devices_[i] == group_->devices_[j];
    if (NcclCommGroup* nccl = group_->nccl(); nccl && group_->world() > 1)
        nccl_ = std::make_unique<NcclCommunicator>(group_->nccl_, rank, stream);
    if (group_->world() > 1) set_up_peers();
}

DeviceCommunicator::~DeviceCommunicator() {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (void* p :
         {static_cast<void*>(data_), static_cast<void*>(sums_), static_cast<void*>(flags_),
          static_cast<void*>(epoch_), static_cast<void*>(probe_), staging_, result_})
        if (p) cudaFree(p);
    if (failure_) cudaFreeHost(failure_);
}

std::string DeviceCommunicator::peer_problem() {
    if (env_or("MYRIAD_PEER_COLLECTIVES", "1") == "0") return "MYRIAD_PEER_COLLECTIVES=0";
    for (int d : group_->devices_) {
        if (d == device_) continue;
        int can = 0;
        comm_check(cudaDeviceCanAccessPeer(&can, device_, d), "peer access check");
        if (!can)
            return fmt::format("GPU {} cannot reach GPU {}'s memory (no peer access)", device_, d);
        const cudaError_t e = cudaDeviceEnablePeerAccess(d, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError();
        } else if (e != cudaSuccess) {
            cudaGetLastError();
            return fmt::format("enabling GPU {}'s access to GPU {} failed: {}", device_, d,
                               cudaGetErrorString(e));
        }
    }
    return "";
}

void DeviceCommunicator::set_up_peers() {
    auto& g = *group_;
    const int world = g.world();
    const auto r = static_cast<size_t>(rank_);
    comm_check(cudaSetDevice(device_), "collectives set-up");
    std::string problem = peer_problem();
    // Every rank allocates (a failed peer check still meets the others at each barrier).
    alloc(&data_, 2 * kDataBytes, "collective buffers");
    alloc(&sums_, 2 * kSumFloats * sizeof(float), "collective buffers");
    alloc(&flags_, kPeerPhases * kPeerBlocks * sizeof(uint32_t), "collective flags");
    alloc(&epoch_, kPeerBlocks * sizeof(uint32_t), "collective flags");
    alloc(&probe_, kPeerMaxRanks * sizeof(uint32_t), "collective flags");
    comm_check(cudaMemset(flags_, 0, kPeerPhases * kPeerBlocks * sizeof(uint32_t)),
               "collective flags");
    comm_check(cudaMemset(epoch_, 0, kPeerBlocks * sizeof(uint32_t)), "collective flags");
    comm_check(cudaMemset(probe_, 0, kPeerMaxRanks * sizeof(uint32_t)), "collective flags");
    comm_check(cudaHostAlloc(reinterpret_cast<void**>(&failure_), sizeof(PeerFailure),
                             cudaHostAllocMapped),
               "collective failure record");
    std::memset(failure_, 0, sizeof(PeerFailure));
    peer_load_kernels();
    comm_check(cudaDeviceSynchronize(), "collectives set-up");
    g.data_[r] = data_;
    g.sums_[r] = sums_;
    g.flags_[r] = flags_;
    g.probes_[r] = probe_;
    g.problems_[r] = problem;
    wait("collectives set-up");
    bool usable = true;
    for (const std::string& p : g.problems_) usable = usable && p.empty();
    if (usable) {  // each rank writes into every rank's probe; each owner reads its own back
        PeerProbes probes;
        for (int p = 0; p < world; ++p) probes.slot[p] = g.probes_[static_cast<size_t>(p)];
        peer_probe(probes, world, rank_, probe_value(rank_), stream_);
        comm_check(cudaGetLastError(), "peer probe");
        sync("peer probe");
        wait("peer probe");
        uint32_t got[kPeerMaxRanks] = {};
        comm_check(cudaMemcpy(got, probe_, sizeof(uint32_t) * world, cudaMemcpyDeviceToHost),
                   "peer probe");
        for (int p = 0; p < world && problem.empty(); ++p)
            if (got[p] != (probe_value(p) ^ static_cast<uint32_t>(rank_)))
                problem = fmt::format(
                    "GPU {} (rank {}) wrote {:#x} into GPU {} (rank {}) but {:#x} arrived: peer "
                    "access is reported but does not work",
                    g.devices_[static_cast<size_t>(p)], p, probe_value(p) ^ rank_, device_, rank_,
                    got[p]);
        g.problems_[r] = problem;
    }
    wait("peer probe");
    std::string why;
    for (int p = 0; p < world && why.empty(); ++p) why = g.problems_[static_cast<size_t>(p)];

    view_.world = world;
    view_.rank = rank_;
    for (int p = 0; p < world; ++p) {
        view_.data[p] = g.data_[static_cast<size_t>(p)];
        view_.sums[p] = g.sums_[static_cast<size_t>(p)];
        view_.flags[p] = g.flags_[static_cast<size_t>(p)];
    }
    view_.epoch = epoch_;
    view_.data_bytes = kDataBytes;
    view_.sum_floats = kSumFloats;
    comm_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&view_.failure), failure_, 0),
               "collective failure record");
    const double bound =
        std::min(kFlagBoundSeconds, std::chrono::duration<double>(collective_timeout()).count());
    view_.timeout_ns = static_cast<uint64_t>(bound * 1e9);

    if (rank_ == 0) {
        g.choice_.peer = why.empty();
        g.choice_.why_not = why;
    }
    wait("collectives set-up");
    if (!why.empty()) {
        if (rank_ == 0)
            log::info("collectives: through the host ({}); CUDA graphs off at {} ranks", why,
                      world);
        return;
    }
    measure();
}

void DeviceCommunicator::measure() {
    auto& g = *group_;
    const std::string forced = env_or("MYRIAD_ALLREDUCE", "");
    const size_t biggest = kMeasured[std::size(kMeasured) - 1];
    // Nothing that waits for the whole device may run while another rank's kernel waits for
    // this one's (ranks sharing a GPU would wait for each other): allocate before meeting.
    float* buf = nullptr;
    alloc(&buf, biggest, "collective measurement");
    comm_check(cudaMemsetAsync(buf, 0, biggest, stream_), "collective measurement");
    cudaEvent_t start, stop;
    comm_check(cudaEventCreate(&start), "collective measurement");
    comm_check(cudaEventCreate(&stop), "collective measurement");
    sync("collective measurement");
    wait("collective measurement");
    // Per size: one-shot, two-shot, NCCL (every rank runs the same sequence).
    std::vector<std::array<double, 3>> us;
    for (size_t bytes : kMeasured) {
        std::array<double, 3> row = {-1, -1, -1};
        for (int algo = 0; algo < (nccl_ ? 3 : 2); ++algo) {
            const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
            auto once = [&] {
                if (algo == 2)
                    nccl_->all_reduce_sum(Tensor(buf, DType::F32, {n}, Device::Cuda));
                else
                    all_reduce_with(algo == 0 ? PeerAlgo::OneShot : PeerAlgo::TwoShot, buf, buf, n);
            };
            for (int i = 0; i < 3; ++i) once();
            comm_check(cudaEventRecord(start, stream_), "collective measurement");
            constexpr int kIters = 10;
            for (int i = 0; i < kIters; ++i) once();
            comm_check(cudaEventRecord(stop, stream_), "collective measurement");
            comm_check(cudaEventSynchronize(stop), "collective measurement");
            float ms = 0;
            comm_check(cudaEventElapsedTime(&ms, start, stop), "collective measurement");
            row[static_cast<size_t>(algo)] = 1000.0 * ms / kIters;
        }
        us.push_back(row);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    check_step();
    if (rank_ == 0) {
        PeerChoice& c = g.choice_;
        c.two_shot_from = SIZE_MAX;
        c.nccl_from = SIZE_MAX;
        std::string line;
        for (size_t i = 0; i < std::size(kMeasured); ++i) {
            const double one = us[i][0], two = us[i][1], nccl = us[i][2];
            line += fmt::format("{}{} {:.1f}/{:.1f}", i ? ", " : "", kib(kMeasured[i]), one, two);
            if (nccl_) line += fmt::format("/{:.1f}", nccl);
            if (two < one && c.two_shot_from == SIZE_MAX) c.two_shot_from = kMeasured[i];
            if (nccl_ && nccl < std::min(one, two) && c.nccl_from == SIZE_MAX)
                c.nccl_from = kMeasured[i];
        }
        if (forced == "oneshot") c.two_shot_from = c.nccl_from = SIZE_MAX;
        if (forced == "twoshot") c.two_shot_from = 0, c.nccl_from = SIZE_MAX;
        if (forced == "nccl" && nccl_) c.nccl_from = 0;
        c.measured = line;
        g.timed_bytes_.assign(std::begin(kMeasured), std::end(kMeasured));
        g.timings_ = us;
        std::string devices;
        for (int d : g.devices_) devices += fmt::format("{}{}", devices.empty() ? "" : ",", d);
        std::string tiers =
            c.two_shot_from == SIZE_MAX ? std::string("one-shot")
            : c.two_shot_from == 0
                ? std::string("two-shot")
                : fmt::format("one-shot below {}, two-shot from it", kib(c.two_shot_from));
        if (c.two_shot_from == SIZE_MAX && c.nccl_from == SIZE_MAX) tiers += " at every size";
        if (c.nccl_from != SIZE_MAX)
            tiers += c.nccl_from == 0 ? "; NCCL at every size"
                                      : fmt::format(", NCCL from {}", kib(c.nccl_from));
        else if (!nccl_)
            tiers += fmt::format("; no NCCL tier ({})", g.nccl_why_);
        else
            tiers += "; NCCL never faster";
        log::info(
            "collectives: kernels over GPU memory (ranks on GPUs {}, {} on the wire): {}{}; "
            "measured one-shot/two-shot{} µs: {}",
            devices, bf16_wire_ ? "BF16" : "F32", tiers,
            forced.empty() ? "" : fmt::format(" (MYRIAD_ALLREDUCE={})", forced),
            nccl_ ? "/NCCL" : "", line);
        if (!nccl_) c.measured += fmt::format("; no NCCL tier ({})", g.nccl_why_);
    }
    // Freeing waits for the whole GPU, which ends: this rank's rounds are done, so every other
    // rank's finish without it. After the meeting another rank's next kernel might wait for this
    // one, and the free would wait for it.
    cudaFree(buf);
    wait("collective measurement");
}

bool DeviceCommunicator::use_kernels() const {
    if (!group_->choice_.peer) return false;
    if (!shared_gpu_) return true;
    // Ranks sharing a GPU: an allocation, a free or a copy through the default stream by one rank
    // waits for the whole GPU, so for another rank's kernel waiting for this one's: op by op
    // they meet on the host; recorded in a graph (which allocates nothing) on the device.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    comm_check(cudaStreamIsCapturing(stream_, &status), "collective");
    return status == cudaStreamCaptureStatusActive;
}

void DeviceCommunicator::sync(const char* op) {
    comm_check(cudaStreamSynchronize(stream_), op);
}

void DeviceCommunicator::check_step() {
    if (!failure_ || failed_) {
        if (failed_)
            internal_error("rank {}: an earlier collective failed on the device; restart", rank_);
        return;
    }
    PeerFailure f;  // written by the device; the stream was waited for before this
    std::memcpy(&f, static_cast<const void*>(failure_), sizeof(f));
    if (!f.failed) return;
    failed_ = true;
    internal_error(
        "rank {} (GPU {}): {} waited {:.0f} s for rank {}'s flag (phase {}, round {}, saw {}); "
        "that rank is stuck or failed (MYRIAD_COLLECTIVE_TIMEOUT sets the bound)",
        f.rank, device_, f.op == kPeerAllReduce ? "all_reduce_sum" : "all_gather_columns",
        static_cast<double>(view_.timeout_ns) * 1e-9, f.peer, f.phase, f.expected, f.seen);
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

void DeviceCommunicator::all_reduce_with(PeerAlgo algo, const float* in, float* out, int64_t n) {
    if (failed_) check_step();
    peer_all_reduce(view_, algo, in, out, n, bf16_wire_, stream_);
    comm_check(cudaGetLastError(), "all_reduce_sum kernel");
}

void DeviceCommunicator::all_reduce_sum(Tensor t) {
    MYRIAD_CHECK(t.dtype == DType::F32, "all_reduce_sum supports F32, got {}", dtype_name(t.dtype));
    if (group_->world() == 1) return;
    const size_t bytes = t.nbytes();
    count(bytes);
    if (!use_kernels()) return host_all_reduce(t);
    if (nccl_ && bytes >= group_->choice_.nccl_from) return nccl_->all_reduce_sum(t);
    const PeerAlgo algo =
        bytes >= group_->choice_.two_shot_from ? PeerAlgo::TwoShot : PeerAlgo::OneShot;
    auto* p = static_cast<float*>(t.data);
    all_reduce_with(algo, p, p, t.numel());
}

bool DeviceCommunicator::all_reduce_add_rmsnorm(Tensor y, Tensor h, Tensor norm, float eps,
                                                Tensor x) {
    if (group_->world() == 1 || !use_kernels()) return false;
    const int64_t d = h.dim(-1), rows = h.numel() / std::max<int64_t>(d, 1);
    const bool with_norm = norm.data != nullptr;
    MYRIAD_CHECK(
        y.dtype == DType::F32 && h.dtype == DType::F32 && y.numel() == h.numel() &&
            (!with_norm || (x.dtype == DType::F32 && x.numel() == h.numel() && norm.numel() == d &&
                            (norm.dtype == DType::F32 || norm.dtype == DType::BF16))),
        "all_reduce_add_rmsnorm: y {}, h {}, x {} and norm {} of {} disagree", y.shape_str(),
        h.shape_str(), x.shape_str(), norm.shape_str(), dtype_name(norm.dtype));
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    // The one-shot and two-shot tiers (NCCL sizes run unfused), in one round, aligned rows.
    const size_t bytes = y.nbytes();
    const PeerChoice& c = group_->choice_;
    const PeerAlgo algo = bytes >= c.two_shot_from ? PeerAlgo::TwoShot : PeerAlgo::OneShot;
    if (bytes >= c.nccl_from || !aligned(y.data) || !aligned(h.data) ||
        (with_norm && !aligned(x.data)) ||
        !peer_fuses_add_rmsnorm(view_, algo, rows, d, bf16_wire_))
        return false;
    if (failed_) check_step();
    count(bytes);
    peer_all_reduce_add_rmsnorm(view_, algo, y.ptr<float>(), h.ptr<float>(),
                                with_norm ? norm.data : nullptr, norm.dtype == DType::BF16, rows, d,
                                eps, with_norm ? x.ptr<float>() : nullptr, bf16_wire_, stream_);
    comm_check(cudaGetLastError(), "all_reduce_add_rmsnorm kernel");
    return true;
}

void DeviceCommunicator::count(size_t bytes) {
    if (rank_ != 0) return;
    std::lock_guard<std::mutex> lock(group_->counts_mutex_);
    ++group_->counts_[bytes];
}

void DeviceCommunicator::host_all_reduce(Tensor t) {
    const int world = group_->world();
    comm_check(cudaSetDevice(device_), "all_reduce_sum");
    const int64_t n = t.numel();
    const int64_t piece = std::min(n, kPiece);
    auto* staging = static_cast<float*>(ensure(staging_, staging_bytes_,
                                               sizeof(float) * world * std::max<int64_t>(piece, 1),
                                               "all_reduce_sum staging"));
    auto* result = static_cast<float*>(ensure(
        result_, result_bytes_, sizeof(float) * std::max<int64_t>(n, 1), "all_reduce_sum result"));
    sync("all_reduce_sum: this rank's input");
    auto& g = *group_;
    g.slots_[static_cast<size_t>(rank_)] = t.data;
    wait("all_reduce_sum");  // every rank's input is posted and complete
    for (int64_t begin = 0; begin < n; begin += piece) {
        const int64_t len = std::min(piece, n - begin);
        for (int r = 0; r < world; ++r)
            comm_check(cudaMemcpyPeerAsync(staging + r * piece, device_,
                                           static_cast<const float*>(g.slots_[r]) + begin,
                                           g.devices_[static_cast<size_t>(r)], sizeof(float) * len,
                                           stream_),
                       "all_reduce_sum copy");
        sum_ranks(staging, world, len, piece, result + begin, stream_);
        comm_check(cudaGetLastError(), "all_reduce_sum kernel");
    }
    sync("all_reduce_sum");
    wait("all_reduce_sum");  // every rank has read every input: each may overwrite its own
    comm_check(
        cudaMemcpyAsync(t.data, result, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream_),
        "all_reduce_sum result");
}

void DeviceCommunicator::all_gather(Tensor in, Tensor out) {
    count_gathered(out);
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
        comm_check(
            cudaMemcpyPeerAsync(static_cast<uint8_t*>(out.data) + bytes * r, device_, g.slots_[r],
                                g.devices_[static_cast<size_t>(r)], bytes, stream_),
            "all_gather copy");
    sync("all_gather");
    wait("all_gather");
}

void DeviceCommunicator::all_gather_columns(Tensor in, Tensor out) {
    count_gathered(out);
    const int world = group_->world();
    const int64_t rows = in.dim(0), cols = in.numel() / std::max<int64_t>(rows, 1);
    MYRIAD_CHECK(
        in.dtype == DType::F32 && out.dtype == DType::F32 && out.numel() == in.numel() * world,
        "all_gather_columns: [{}, {}] F32 from each of {} ranks into {} elements", rows, cols,
        world, out.numel());
    const auto* src = static_cast<const float*>(in.data);
    auto* dst = static_cast<float*>(out.data);
    if (use_kernels() && static_cast<size_t>(cols) * sizeof(float) <= kDataBytes) {
        if (failed_) check_step();
        peer_gather_columns(view_, src, dst, rows, cols, stream_);
        comm_check(cudaGetLastError(), "all_gather_columns kernel");
        return;
    }
    comm_check(cudaSetDevice(device_), "all_gather_columns");
    sync("all_gather_columns: this rank's input");
    auto& g = *group_;
    g.slots_[static_cast<size_t>(rank_)] = in.data;
    wait("all_gather_columns");
    const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
    for (int r = 0; r < world; ++r)
        comm_check(
            cudaMemcpy2DAsync(dst + r * cols, row_bytes * world, g.slots_[r], row_bytes, row_bytes,
                              static_cast<size_t>(rows), cudaMemcpyDefault, stream_),
            "all_gather_columns copy");
    sync("all_gather_columns");
    wait("all_gather_columns");
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
