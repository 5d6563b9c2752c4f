// CudaOps: device memory, the step's metadata, and the element-wise and per-row ops.
#include "ops/cuda/cuda_ops.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/norm_shapes.h"
#include "util/error.h"

namespace myriad::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        internal_error(
            "out of GPU memory allocating {} bytes ({}); use a smaller model, fewer KV "
            "blocks or a shorter --max-num-batched-tokens",
            bytes, cudaGetErrorString(e));
    }
}

DeviceBuffer::~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (ptr_) cudaFree(ptr_);
        ptr_ = o.ptr_;
        size_ = o.size_;
        o.ptr_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

namespace {
constexpr size_t kLtWorkspace = size_t{32} << 20;
constexpr size_t kMinScratchChunk = size_t{16} << 20;

size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}
}  // namespace

CudaOps::CudaOps(int device, const KernelChoices& choices) : device_(device), choices_(choices) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    // A blocking stream: copies on the legacy default stream (the communicator's) order with it.
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
    lt_workspace_ = DeviceBuffer(kLtWorkspace);
    sample_edits_ = DeviceBuffer(kEditPiece * sizeof(LogitEdit));
    split_ws_ = DeviceBuffer(static_cast<size_t>(kSplitFloats) * sizeof(float) +
                             static_cast<size_t>(kSplitCounters) * sizeof(uint32_t));
    check_cuda(cudaMemset(split_ws_.data(), 0, split_ws_.size()), "skinny split workspace");
    profile_ = choices_.profile;
    graphs_enabled_ = choices_.graphs && !profile_;
    if (const char* v = std::getenv("MYRIAD_PINNED_STAGING")) staging_on_ = std::string(v) != "0";
    set_stream_pdl(stream_, choices_.pdl);
    // The first op's time counts from here, not from the clock's epoch.
    profile_last_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

CudaOps::~CudaOps() {
    if (stream_) cudaStreamSynchronize(stream_);
    drop_graphs();
    if (profile_ && !profile_times_.empty()) {
        std::vector<std::pair<double, std::string>> order;
        double total = 0;
        for (const auto& [name, v] : profile_times_) {
            order.emplace_back(v.first, name);
            total += v.first;
        }
        // The costliest last (output is often cut to its tail), at most 16 of them.
        std::sort(order.begin(), order.end());
        if (order.size() > 16) order.erase(order.begin(), order.end() - 16);
        std::fprintf(stderr, "CUDA op profile (each op synchronised; %.3f s in all):\n", total);
        for (const auto& [t, name] : order)
            std::fprintf(stderr, "  %-28s %9.3f ms %5.1f%% %8lld calls\n", name.c_str(), t * 1e3,
                         100 * t / total, (long long)profile_times_[name].second);
    }
    if (step_host_) cudaFreeHost(step_host_);
    if (lt_) cublasLtDestroy(lt_);
    if (stream_) {
        set_stream_pdl(stream_, true);  // a later stream may get the same handle
        cudaStreamDestroy(stream_);
    }
}

void CudaOps::check(const char* what) {
    check_cuda(cudaGetLastError(), what);
    // (No waiting while a graph is captured: a capturing stream cannot be synchronised.)
    if (choices_.sync && capturing_ < 0) check_cuda(cudaStreamSynchronize(stream_), what);
    if (profile_) {
        check_cuda(cudaStreamSynchronize(stream_), what);
        const double t = now_s();
        auto& slot = profile_times_[what];
        slot.first += t - profile_last_;
        ++slot.second;
        profile_last_ = t;
    }
}

void CudaOps::set_choices(const KernelChoices& choices) {
    MYRIAD_CHECK(choices.exact == choices_.exact,
                 "set_choices: exact mode is decided when the weights are loaded");
    drop_graphs();
    const bool graphs = graphs_enabled_ && choices_.graphs;
    choices_ = choices;
    profile_ = choices_.profile;
    graphs_enabled_ = graphs && choices_.graphs && !profile_;
    set_stream_pdl(stream_, choices_.pdl);
}

void CudaOps::synchronize(const char* what) {
    check_cuda(cudaStreamSynchronize(stream_), what);
}

const StepInput& CudaOps::step() const {
    MYRIAD_CHECK(step_ != nullptr, "an op that needs the step ran before begin_step");
    return *step_;
}

std::shared_ptr<void> CudaOps::allocate(Tensor& t) {
    auto buf = std::make_shared<DeviceBuffer>(std::max<size_t>(t.nbytes(), 1));
    check_cuda(cudaMemsetAsync(buf->data(), 0, buf->size(), stream_), "allocate");
    synchronize("allocate");
    t.data = buf->data();
    t.device = Device::Cuda;
    return buf;
}

Tensor CudaOps::scratch(DType dt, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, dt, dims, Device::Cuda);
    const size_t bytes = align_up(std::max<size_t>(t.nbytes(), 1), 256);
    if (chunks_.empty() || used_ + bytes > chunks_.back().size()) {
        // Only while the arena is still smaller than the largest step (see the header).
        chunks_.emplace_back(std::max(bytes, kMinScratchChunk));
        used_ = 0;
    }
    t.data = static_cast<uint8_t*>(chunks_.back().data()) + used_;
    used_ += bytes;
    total_used_ += bytes;
    return t;
}

void CudaOps::reset_scratch() {
    peak_ = std::max(peak_, total_used_);
    if (chunks_.size() > 1) {
        synchronize("reset_scratch");
        drop_graphs();  // they hold addresses in the chunks
        chunks_.clear();
        chunks_.emplace_back(align_up(peak_, size_t{1} << 20));
    }
    used_ = 0;
    total_used_ = 0;
}

// Peak bookkeeping first: the arena merged at the next reset must hold what was in use at once.
// A chunk added since the mark holds nothing live any more, so the last one is reused from its
// start (the rest of the mark's chunk stays unused until the reset merges them).
void CudaOps::release_scratch(const ScratchMark& mark) {
    peak_ = std::max(peak_, total_used_);
    used_ = chunks_.size() == mark.chunks ? mark.used : 0;
    total_used_ = mark.total;
}

void CudaOps::copy_to_host(Tensor src, void* dst) {
    if (capturing_ >= 0) finish_capture(src);
    // The stream first: a copy to pageable memory that waits for a stream holds up other
    // threads' CUDA calls meanwhile, and a rank sharing the GPU may be the one this stream's
    // collective waits for.
    synchronize("copy_to_host");
    check_cuda(cudaMemcpyAsync(dst, src.data, src.nbytes(), cudaMemcpyDeviceToHost, stream_),
               "copy_to_host");
    synchronize("copy_to_host");
}

void CudaOps::copy_from_host(const void* src, Tensor dst) {
    check_cuda(cudaMemcpyAsync(dst.data, src, dst.nbytes(), cudaMemcpyHostToDevice, stream_),
               "copy_from_host");
    synchronize("copy_from_host");
}

// The step's ids, positions, slots and block tables as one block: staged in pinned memory and
// uploaded with one copy, sections 16-byte aligned. Every section but the block tables (last)
// depends only on the numbers of tokens, sequences and logit rows, so steps of one decode batch
// size share a layout and a captured graph reads the next step's inputs where it expects them.
void CudaOps::stage_step(const StepInput& st) {
    const size_t t = st.token_ids.size(), s = st.seqs.size(), n = st.logit_rows.size();
    size_t blocks = 0;
    for (const SeqSlice& q : st.seqs) blocks += q.block_table.size();
    size_t at = 0;
    auto section = [&](size_t bytes) {
        const size_t begin = at;
        at = align_up(at + std::max<size_t>(bytes, 1), 16);
        return begin;
    };
    off_.ids = section(t * 4);
    off_.positions = section(t * 4);
    off_.slots = section(t * 8);
    off_.row_seq = section(t * 4);
    off_.q_begin = section(s * 4);
    off_.q_len = section(s * 4);
    off_.ctx_len = section(s * 4);
    off_.ctx_prefix = section((s + 1) * 8);
    off_.table_begin = section((s + 1) * 8);
    off_.logit_rows = section(n * 4);
    off_.tables = section(blocks * 4);
    if (at > step_capacity_) {
        synchronize("begin_step");
        if (step_host_) cudaFreeHost(step_host_);
        step_host_ = nullptr;
        step_capacity_ = std::max(at * 2, size_t{1} << 16);
        check_cuda(cudaMallocHost(&step_host_, step_capacity_), "cudaMallocHost");
        drop_graphs();  // they read the old block
        step_dev_ = DeviceBuffer(step_capacity_);
    } else {
        // The previous step's upload may still read the staging block.
        synchronize("begin_step");
    }
    auto* h = static_cast<uint8_t*>(step_host_);
    auto put = [&](size_t off, const void* src, size_t bytes) {
        if (bytes) std::memcpy(h + off, src, bytes);
    };
    put(off_.ids, st.token_ids.data(), t * 4);
    put(off_.positions, st.positions.data(), t * 4);
    put(off_.slots, st.slots.data(), t * 8);
    put(off_.logit_rows, st.logit_rows.data(), n * 4);
    auto* row_seq = reinterpret_cast<int32_t*>(h + off_.row_seq);
    auto* q_begin = reinterpret_cast<int32_t*>(h + off_.q_begin);
    auto* q_len = reinterpret_cast<int32_t*>(h + off_.q_len);
    auto* ctx_len = reinterpret_cast<int32_t*>(h + off_.ctx_len);
    auto* ctx_prefix = reinterpret_cast<int64_t*>(h + off_.ctx_prefix);
    auto* table_begin = reinterpret_cast<int64_t*>(h + off_.table_begin);
    auto* tables = reinterpret_cast<int32_t*>(h + off_.tables);
    std::fill(row_seq, row_seq + t, -1);
    int64_t ctx = 0, tb = 0;
    for (size_t i = 0; i < s; ++i) {
        const SeqSlice& q = st.seqs[i];
        MYRIAD_CHECK(q.q_begin >= 0 && q.q_begin + q.q_len <= static_cast<int64_t>(t),
                     "sequence rows [{}, +{}) outside {} tokens", q.q_begin, q.q_len, t);
        for (int64_t r = q.q_begin; r < q.q_begin + q.q_len; ++r)
            row_seq[r] = static_cast<int32_t>(i);
        q_begin[i] = static_cast<int32_t>(q.q_begin);
        q_len[i] = static_cast<int32_t>(q.q_len);
        ctx_len[i] = static_cast<int32_t>(q.ctx_len);
        ctx_prefix[i] = ctx;
        table_begin[i] = tb;
        ctx += q.ctx_len;
        std::memcpy(tables + tb, q.block_table.data(), q.block_table.size() * 4);
        tb += static_cast<int64_t>(q.block_table.size());
    }
    ctx_prefix[s] = ctx;
    table_begin[s] = tb;
    check_cuda(cudaMemcpyAsync(step_dev_.data(), step_host_, at, cudaMemcpyHostToDevice, stream_),
               "begin_step upload");
}

StepView CudaOps::step_view() const {
    auto* d = static_cast<uint8_t*>(step_dev_.data());
    StepView v;
    v.positions = reinterpret_cast<const int32_t*>(d + off_.positions);
    v.slots = reinterpret_cast<const int64_t*>(d + off_.slots);
    v.row_seq = reinterpret_cast<const int32_t*>(d + off_.row_seq);
    v.q_begin = reinterpret_cast<const int32_t*>(d + off_.q_begin);
    v.q_len = reinterpret_cast<const int32_t*>(d + off_.q_len);
    v.ctx_len = reinterpret_cast<const int32_t*>(d + off_.ctx_len);
    v.ctx_prefix = reinterpret_cast<const int64_t*>(d + off_.ctx_prefix);
    v.table_begin = reinterpret_cast<const int64_t*>(d + off_.table_begin);
    v.tables = reinterpret_cast<const int32_t*>(d + off_.tables);
    return v;
}

void CudaOps::embed(const Weight& table, int64_t vocab_begin, Tensor out) {
    const auto& ids = step().token_ids;
    const int64_t hidden = table.cols;
    MYRIAD_CHECK(out.dim(0) == static_cast<int64_t>(ids.size()) && out.dim(1) == hidden,
                 "embed output {} for {} tokens of width {}", out.shape_str(), ids.size(), hidden);
    const auto* d = static_cast<const uint8_t*>(step_dev_.data());
    cuda::embed(table.data.data, table.data.dtype == DType::BF16, table.rows, hidden,
                reinterpret_cast<const int32_t*>(d + off_.ids), vocab_begin, out.dim(0),
                out.ptr<float>(), stream_);
    check("embed");
}

void CudaOps::rmsnorm(Tensor x, const Weight& w, float eps, Tensor out) {
    const int64_t d = x.dim(-1), rows = rmsnorm_rows(x, w);
    cuda::rmsnorm(x.ptr<float>(), w.data.data, w.data.dtype == DType::BF16, rows, d, eps,
                  out.ptr<float>(), stream_);
    check("rmsnorm");
}

void CudaOps::add(Tensor x, Tensor y) {
    MYRIAD_CHECK(x.numel() == y.numel(), "add: {} vs {}", x.shape_str(), y.shape_str());
    cuda::add(x.ptr<float>(), y.ptr<float>(), x.numel(), stream_);
    check("add");
}

void CudaOps::add_rmsnorm(Tensor x, Tensor y, const Weight& w, float eps, Tensor out) {
    const int64_t d = x.dim(-1), rows = add_rmsnorm_rows(x, y, w, out);
    cuda::add_rmsnorm(x.ptr<float>(), y.ptr<float>(), w.data.data, w.data.dtype == DType::BF16,
                      rows, d, eps, out.ptr<float>(), stream_);
    check("add_rmsnorm");
}

void CudaOps::silu_mul(Tensor gate, Tensor up, Tensor out) {
    MYRIAD_CHECK(gate.numel() == up.numel() && gate.numel() == out.numel(), "silu_mul: {} {} {}",
                 gate.shape_str(), up.shape_str(), out.shape_str());
    cuda::silu_mul(gate.ptr<float>(), up.ptr<float>(), out.ptr<float>(), gate.numel(), stream_);
    check("silu_mul");
}

void CudaOps::gather_logit_rows(Tensor x, Tensor out) {
    const auto& rows = step().logit_rows;
    const int64_t d = x.dim(-1);
    MYRIAD_CHECK(out.numel() == static_cast<int64_t>(rows.size()) * d,
                 "gather_logit_rows: output {} for {} rows of {}", out.shape_str(), rows.size(), d);
    const auto* dev = static_cast<const uint8_t*>(step_dev_.data());
    cuda::gather_rows(x.ptr<float>(), d, reinterpret_cast<const int32_t*>(dev + off_.logit_rows),
                      static_cast<int64_t>(rows.size()), out.ptr<float>(), stream_);
    check("gather_logit_rows");
}

void CudaOps::argmax(Tensor x, Tensor out) {
    const int64_t v = x.dim(-1), n = x.numel() / v;
    cuda::argmax(x.ptr<float>(), n, v, out.ptr<int32_t>(), stream_);
    check("argmax");
}

}  // namespace myriad::cuda
