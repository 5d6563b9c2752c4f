// CudaOps: decode steps recorded as CUDA graphs, one per batch size, and replayed.
//
// A decode step of a batch size runs op by op the first time (lazy tables are built, the
// arena reaches its size); the second time it is captured (the kernels are recorded on the
// stream, then the graph runs); later steps of that size upload their inputs into the metadata
// block at the same offsets and replay the graph: no op is called on the host at all.
#include <atomic>
#include <chrono>
#include <cstring>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/expert_stats.h"
#include "util/error.h"

namespace myriad::cuda {

namespace {
// Batch sizes above this run op by op (each graph is captured once and kept).
constexpr int64_t kMaxGraphRows = 512;
std::atomic<int64_t> g_replays{0};
std::atomic<int64_t> g_capture_us{0};
}  // namespace

int64_t graph_replays_total() {
    return g_replays.load();
}

double graph_capture_seconds_total() {
    return static_cast<double>(g_capture_us.load()) / 1e6;
}

int64_t CudaOps::decode_key(const StepInput& st) {
    const int64_t t = st.num_tokens();
    if (t == 0 || t > kMaxGraphRows || static_cast<int64_t>(st.seqs.size()) != t ||
        static_cast<int64_t>(st.logit_rows.size()) != t || !st.logprob_spans.empty())
        return -1;
    for (int64_t i = 0; i < t; ++i) {
        const SeqSlice& s = st.seqs[static_cast<size_t>(i)];
        if (s.q_len != 1 || s.q_begin != i || st.logit_rows[static_cast<size_t>(i)] != i) return -1;
    }
    return t;
}

void CudaOps::drop_graphs() {
    for (auto& [key, g] : graphs_)
        if (g.exec) cudaGraphExecDestroy(g.exec);
    graphs_.clear();
    seen_.clear();
}

void CudaOps::begin_step(const StepInput& st) {
    step_ = &st;
    stage_step(st);
    if (profile_) {  // the step's upload is not charged to its first op
        synchronize("begin_step");
        profile_last_ =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
    }
    const int64_t key = graphs_enabled_ && !expert_stats().enabled ? decode_key(st) : -1;
    // Capture the second decode step of a size, once the arena is one block (nothing is
    // allocated while capturing, and the addresses stay until the arena is replaced).
    if (key < 0 || graphs_.count(key) || ++seen_[key] < 2 || chunks_.size() != 1) return;
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "graph capture");
    capturing_ = key;
    capture_start_ = std::chrono::steady_clock::now();
}

void CudaOps::finish_capture(Tensor src) {
    const int64_t key = capturing_;
    capturing_ = -1;
    cudaGraph_t graph = nullptr;
    const cudaError_t e = cudaStreamEndCapture(stream_, &graph);
    if (e != cudaSuccess || graph == nullptr) {
        cudaGetLastError();
        internal_error(
            "CUDA graph capture of a decode step of {} rows failed: {}; run with "
            "MYRIAD_KERNELS=graphs=0",
            key, cudaGetErrorString(e));
    }
    StepGraph g;
    const cudaError_t ie = cudaGraphInstantiate(&g.exec, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(ie, "graph instantiate");
    g.out = src.data;
    g.bytes = src.nbytes();
    g.offsets = off_;
    g_capture_us += std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - capture_start_)
                        .count();
    check_cuda(cudaGraphLaunch(g.exec, stream_), "graph launch");
    graphs_.emplace(key, g);
}

bool CudaOps::replay_step(const StepInput& st, float* logits, int64_t width,
                          const StepSampling* sampling, int32_t* tokens) {
    if (!graphs_enabled_ || expert_stats().enabled) return false;  // statistics need the ops
    const int64_t key = decode_key(st);
    auto it = graphs_.find(key);
    if (key < 0 || it == graphs_.end()) return false;
    MYRIAD_CHECK(it->second.bytes == static_cast<size_t>(key * width) * sizeof(float),
                 "graph of {} rows holds {} bytes of logits, expected rows of {}", key,
                 it->second.bytes, width);
    step_ = &st;
    stage_step(st);
    it = graphs_.find(key);  // staging may have replaced the block, dropping the graphs
    if (it == graphs_.end() || std::memcmp(&it->second.offsets, &off_, sizeof(StepOffsets)) != 0)
        return false;
    check_cuda(cudaGraphLaunch(it->second.exec, stream_), "graph replay");
    ++graph_replays_;
    ++g_replays;
    if (sampling) {  // the recorded logits, sampled where they are
        sample(Tensor(const_cast<void*>(it->second.out), DType::F32, {key, width}, Device::Cuda),
               *sampling, tokens, logits);
        return true;
    }
    synchronize("graph replay");  // before the pageable copy (copy_to_host says why)
    check_cuda(
        cudaMemcpyAsync(logits, it->second.out, it->second.bytes, cudaMemcpyDeviceToHost, stream_),
        "graph replay");
    synchronize("graph replay");
    return true;
}

}  // namespace myriad::cuda
