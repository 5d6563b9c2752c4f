// CudaOps: decode steps recorded as CUDA graphs, one per (sequences, rows a sequence), and
// replayed.
//
// A decode step of a shape runs op by op the first time (lazy tables are built, the arena
// reaches its size); the second time it is captured (the kernels are recorded on the stream,
// then the graph runs); later steps of that shape upload their inputs into the metadata block at
// the same offsets and replay the graph: no op is called on the host at all.
//
// Rows a sequence: 1 for plain decode, k + 1 for a step verifying a draft of k tokens for every
// sequence (speculation; the absorbed decode attention takes the rows of a sequence causally, so
// the recorded kernels are those of any step of the shape). A step whose sequences carry drafts
// of different lengths, or mix drafting and plain sequences, runs op by op.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/expert_stats.h"
#include "util/error.h"

namespace myriad::cuda {

namespace {
// Steps of more rows than this run op by op (each graph is captured once and kept).
constexpr int64_t kMaxGraphRows = 512;
// A key is sequences * kKeyRowsBase + rows a sequence (so at most kKeyRowsBase - 1 rows), plus
// kKeyLong where the longest context is long for decode attention (KernelChoices::decode_long:
// another kernel, so another graph).
constexpr int64_t kKeyRowsBase = 64;
constexpr int64_t kKeyLong = int64_t{1} << 40;
std::atomic<int64_t> g_replays{0}, g_verify_replays{0};

int64_t key_seqs(int64_t key) {
    return key % kKeyLong / kKeyRowsBase;
}
int64_t key_rows_a_seq(int64_t key) {
    return key % kKeyRowsBase;
}
int64_t key_rows(int64_t key) {
    return key_seqs(key) * key_rows_a_seq(key);
}
std::atomic<int64_t> g_capture_us{0};
}  // namespace

int64_t graph_replays_total() {
    return g_replays.load();
}

int64_t graph_verify_replays_total() {
    return g_verify_replays.load();
}

double graph_capture_seconds_total() {
    return static_cast<double>(g_capture_us.load()) / 1e6;
}

int64_t CudaOps::decode_key(const StepInput& st) const {
    const int64_t t = st.num_tokens(), n = static_cast<int64_t>(st.seqs.size());
    if (st.eager || t == 0 || n == 0 || t > kMaxGraphRows || t % n != 0 ||
        static_cast<int64_t>(st.logit_rows.size()) != t || !st.logprob_spans.empty())
        return -1;
    const int64_t r = t / n;  // rows a sequence: the same for every one
    if (r >= kKeyRowsBase) return -1;
    for (int64_t i = 0; i < n; ++i) {
        const SeqSlice& s = st.seqs[static_cast<size_t>(i)];
        if (s.q_len != r || s.draft != r - 1 || s.q_begin != i * r) return -1;
    }
    for (int64_t i = 0; i < t; ++i)
        if (st.logit_rows[static_cast<size_t>(i)] != i) return -1;
    int64_t context = 0;
    for (const SeqSlice& s : st.seqs) context = std::max(context, s.ctx_len);
    return n * kKeyRowsBase + r + (choices_.decode_long(context) ? kKeyLong : 0);
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
            "CUDA graph capture of a decode step of {} sequences of {} rows failed: {}; run with "
            "MYRIAD_KERNELS=graphs=0",
            key_seqs(key), key_rows_a_seq(key), cudaGetErrorString(e));
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

const void* CudaOps::replay_recording(const StepInput& st, int64_t width) {
    if (!graphs_enabled_ || expert_stats().enabled) return nullptr;  // statistics need the ops
    const int64_t key = decode_key(st);
    auto it = graphs_.find(key);
    // A recording that ends at other logits (the whole rows, or a rank's slice sampled across
    // ranks) is not this step's: it runs op by op.
    if (key < 0 || it == graphs_.end() ||
        it->second.bytes != static_cast<size_t>(key_rows(key) * width) * sizeof(float))
        return nullptr;
    step_ = &st;
    stage_step(st);
    it = graphs_.find(key);  // staging may have replaced the block, dropping the graphs
    if (it == graphs_.end() || std::memcmp(&it->second.offsets, &off_, sizeof(StepOffsets)) != 0)
        return nullptr;
    check_cuda(cudaGraphLaunch(it->second.exec, stream_), "graph replay");
    ++graph_replays_;
    ++g_replays;
    if (key_rows_a_seq(key) > 1) ++g_verify_replays;
    return it->second.out;
}

bool CudaOps::replay_step(const StepInput& st, float* logits, int64_t width,
                          const StepSampling* sampling, int32_t* tokens) {
    const void* out = replay_recording(st, width);
    if (!out) return false;
    const int64_t rows = st.num_tokens();
    if (sampling) {  // the recorded logits, sampled where they are
        sample(Tensor(const_cast<void*>(out), DType::F32, {rows, width}, Device::Cuda), *sampling,
               tokens, logits);
        return true;
    }
    synchronize("graph replay");  // before the pageable copy (copy_to_host says why)
    check_cuda(cudaMemcpyAsync(logits, out, static_cast<size_t>(rows * width) * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_),
               "graph replay");
    synchronize("graph replay");
    return true;
}

Tensor CudaOps::replay_step_logits(const StepInput& st, int64_t width) {
    const void* out = replay_recording(st, width);
    if (!out) return {};
    return Tensor(const_cast<void*>(out), DType::F32, {st.num_tokens(), width}, Device::Cuda);
}

void CudaOps::end_recording(Tensor logits) {
    if (capturing_ >= 0) finish_capture(logits);
}

}  // namespace myriad::cuda
