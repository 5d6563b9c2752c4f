// The communicator of ranks that are threads of one process on GPUs, any number of them on one
// GPU (--devices 0,0,0,0). Where every pair of ranks can reach the other's memory (one GPU, or
// GPUs with working peer access, proven at start by a write and a read-back), the collectives
// are kernels over registered device buffers (peer_collectives.h): they enqueue on the rank's
// stream and return, so decode steps are captured in CUDA graphs; one-shot below a crossover
// measured at start, two-shot above. Ranks that share a GPU use the kernels inside graphs only
// (op by op, one rank's allocation would wait for another's waiting kernel). Elsewhere they fall
// back to copies through the host, each rank waiting for its stream (correct everywhere, slow, no
// graphs). Sums are taken in fixed rank order, so every rank gets bitwise the same result.
// Where the GPUs are distinct and NCCL loads, the group holds NCCL too: messages from a third
// crossover (measured with the others) go to it, F32 on the wire.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/cuda/nccl_communicator.h"
#include "parallel/cuda/peer_collectives.h"
#include "parallel/rank_barrier.h"

namespace myriad::cuda {

// Bytes of all-reduce messages from which two-shot, then NCCL, is used (what the start-up
// measurement decided; SIZE_MAX: never).
struct PeerChoice {
    bool peer = false;    // the kernels run (else the host path)
    std::string why_not;  // when not
    size_t two_shot_from = SIZE_MAX;
    size_t nccl_from = SIZE_MAX;  // NCCL, where the group holds it
    std::string measured;         // the line that says what was measured
};

// State shared by the ranks: the device of each, their posted buffers, the meeting point, and
// (ranks on distinct GPUs, libnccl loaded) NCCL for the messages where it beats the kernels.
class DeviceCommGroup final : public CommGroup {
  public:
    // nccl: the NCCL group of the same ranks, or null with `nccl_why` saying why there is none.
    explicit DeviceCommGroup(std::vector<int> devices,
                             std::shared_ptr<NcclCommGroup> nccl = nullptr,
                             std::string nccl_why = "no NCCL group given");
    int world() const { return static_cast<int>(devices_.size()); }
    RankBarrier& barrier() override { return barrier_; }
    void abort(const std::string& why) override;
    const PeerChoice& choice() const { return choice_; }
    NcclCommGroup* nccl() const { return nccl_.get(); }
    const std::string& nccl_why() const { return nccl_why_; }
    int64_t measured_two_shot_from() const override {
        return choice_.two_shot_from == SIZE_MAX ? -1 : static_cast<int64_t>(choice_.two_shot_from);
    }
    std::string measured_all_reduce() const override;
    AllReduceEstimate all_reduce_estimate(size_t bytes) const override;
    std::map<size_t, int64_t> all_reduce_counts() const override;

  private:
    friend class DeviceCommunicator;
    std::vector<int> devices_;
    std::shared_ptr<NcclCommGroup> nccl_;
    std::string nccl_why_;
    mutable std::mutex counts_mutex_;
    std::map<size_t, int64_t> counts_;  // rank 0's all-reduces so far, by bytes
    RankBarrier barrier_;
    std::vector<const void*> slots_;
    // Set up by the ranks together (DeviceCommunicator's constructor).
    std::vector<uint8_t*> data_;
    std::vector<float*> sums_;
    std::vector<uint32_t*> flags_, probes_;
    std::vector<std::string> problems_;  // a rank's reason the kernels cannot run, or ""
    PeerChoice choice_;
    // Rank 0's measurement: microseconds of one-shot, two-shot and NCCL (-1: not run) per size.
    std::vector<size_t> timed_bytes_;
    std::vector<std::array<double, 3>> timings_;
};

// The group of ranks on GPUs `devices` (devices[r] is rank r's), with NCCL where the GPUs are
// distinct and libnccl loads (MYRIAD_NCCL=0: never).
std::shared_ptr<DeviceCommGroup> make_device_comm_group(const std::vector<int>& devices);

class DeviceCommunicator final : public Communicator {
  public:
    // Rank `rank` of `group`, whose work runs on `stream` (of its device). All ranks construct
    // theirs at the same time (they meet to register buffers and measure). bf16_wire: all-reduce
    // inputs cross in BF16 (F32 sums); false for exact runs.
    DeviceCommunicator(std::shared_ptr<DeviceCommGroup> group, int rank, cudaStream_t stream,
                       bool bf16_wire = true);
    ~DeviceCommunicator() override;
    int rank() const override { return rank_; }
    int world() const override { return group_->world(); }
    void all_reduce_sum(Tensor t) override;
    // One-shot sizes through the kernels: one launch (peer_all_reduce_add_rmsnorm).
    bool all_reduce_add_rmsnorm(Tensor y, Tensor h, Tensor norm, float eps, Tensor x) override;
    void all_gather(Tensor in, Tensor out) override;
    void all_gather_columns(Tensor in, Tensor out) override;
    void broadcast(void* data, size_t bytes, int root) override;
    void barrier() override { wait("barrier"); }
    bool graph_safe() const override { return group_->choice_.peer; }
    void check_step() override;

    // The kernels' view of the group (tests and the benchmark).
    const PeerView& view() const { return view_; }
    // An all-reduce with the given algorithm regardless of the crossover (tests, measurement).
    void all_reduce_with(PeerAlgo algo, const float* in, float* out, int64_t n);

  private:
    void wait(const char* op) { group_->barrier_.arrive_and_wait(rank_, op); }
    void sync(const char* op);
    // A device buffer of at least `bytes` (regrown, contents dropped).
    void* ensure(void*& buf, size_t& size, size_t bytes, const char* what);
    void set_up_peers();
    std::string peer_problem();
    void measure();
    void host_all_reduce(Tensor t);
    void count(size_t bytes);
    // This call goes through the kernels (else through the host).
    bool use_kernels() const;

    std::shared_ptr<DeviceCommGroup> group_;
    int rank_, device_;
    cudaStream_t stream_;
    bool bf16_wire_;
    void* staging_ = nullptr;  // [world, piece] floats: every rank's piece of the input
    size_t staging_bytes_ = 0;
    void* result_ = nullptr;  // the sum, copied over the input once every rank has read it
    size_t result_bytes_ = 0;
    // The kernels' buffers of this rank (freed with it) and their view.
    uint8_t* data_ = nullptr;
    float* sums_ = nullptr;
    uint32_t* flags_ = nullptr;
    uint32_t* epoch_ = nullptr;
    uint32_t* probe_ = nullptr;
    PeerFailure* failure_ = nullptr;  // host-mapped
    bool failed_ = false;
    bool shared_gpu_ = false;                 // some GPU holds several ranks
    std::unique_ptr<NcclCommunicator> nccl_;  // this rank's, where the group holds NCCL
    PeerView view_;
};

// out[i] = in[0][i] + in[1][i] + ... + in[world-1][i], rows of `stride` floats, left to right.
void sum_ranks(const float* in, int world, int64_t n, int64_t stride, float* out,
               cudaStream_t stream);

}  // namespace myriad::cuda
