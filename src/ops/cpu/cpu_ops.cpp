#include "ops/cpu/cpu_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu/cpu_dequant.h"
#include "ops/norm_shapes.h"
#include "ops/synthetic_weight.h"
#include "ops/token_choice.h"
#include "util/error.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace myriad {

void set_blas_threads(int threads) {
    openblas_set_num_threads(std::max(1, threads));
}

void sgemm_nt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
                c, static_cast<int>(ldc));
}

void sgemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
                c, static_cast<int>(ldc));
}

CpuOps::CpuOps(int threads) : pool_(std::max(1, threads)) {}
CpuOps::~CpuOps() = default;

const StepInput& CpuOps::step() const {
    MYRIAD_CHECK(step_ != nullptr, "an op that needs the step ran before begin_step");
    return *step_;
}

Weight CpuOps::load_weight(const WeightSource& s) {
    MYRIAD_CHECK(s.row_begin >= 0 && s.row_begin <= s.row_end && s.row_end <= s.src_rows &&
                     s.col_begin >= 0 && s.col_begin <= s.col_end && s.col_end <= s.src_cols,
                 "weight slice rows [{}, {}) cols [{}, {}) outside [{}, {}]", s.row_begin,
                 s.row_end, s.col_begin, s.col_end, s.src_rows, s.src_cols);
    if (s.synthetic.seed != 0) {  // generated on the host; quantised weights keep the buffers
        std::shared_ptr<void> keep;
        Weight w = load_weight(materialize_synthetic(s, keep));
        if (w.format != WeightFormat::Dense) w.storage = keep;
        return w;
    }
    Weight w;
    w.rows = s.row_end - s.row_begin;
    w.cols = s.col_end - s.col_begin;
    if (s.format != WeightFormat::Dense) {
        // Zero copy: the shard is a window of the mapped tensor, expanded tile by tile in linear.
        w.format = s.format;
        w.quant = s.quant;
        w.quant.row_offset = s.row_begin;
        w.quant.col_offset = s.col_begin;
        if (!s.to_dense) return w;
    }
    auto buf = std::make_shared<Buffer>(static_cast<size_t>(w.rows * w.cols) * sizeof(float));
    Tensor data(buf->data(), DType::F32, {w.rows, w.cols});
    if (w.format != WeightFormat::Dense) {
        dequantize_rows(w, 0, w.rows, data.ptr<float>());
        w = Weight{WeightFormat::Dense, w.rows, w.cols, data, buf, {}};
        return w;
    }
    w.data = data;
    w.storage = buf;
    const size_t esize = dtype_size(s.dtype);
    const auto* base = static_cast<const uint8_t*>(s.data);
    auto* dst = w.data.ptr<float>();
    for (int64_t r = 0; r < w.rows; ++r) {
        const uint8_t* src = base + ((s.row_begin + r) * s.src_cols + s.col_begin) * esize;
        convert_to_f32(s.dtype, src, dst + r * w.cols, static_cast<size_t>(w.cols));
    }
    return w;
}

std::shared_ptr<void> CpuOps::allocate(Tensor& t) {
    // Long-lived (the KV cache): pages taken as they are first written.
    auto buf = std::make_shared<Buffer>(t.nbytes(), /*lazy=*/true);
    t.data = buf->data();
    t.device = Device::Cpu;
    return buf;
}

Tensor CpuOps::scratch(DType dt, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, dt, dims);
    size_t bytes = (t.nbytes() + 63) / 64 * 64;
    if (chunks_.empty() || used_ + bytes > chunks_.back().size()) {
        chunks_.emplace_back(std::max<size_t>(bytes, size_t{1} << 20));
        used_ = 0;
    }
    t.data = static_cast<uint8_t*>(chunks_.back().data()) + used_;
    used_ += bytes;
    total_used_ += bytes;
    return t;
}

void CpuOps::reset_scratch() {
    peak_ = std::max(peak_, total_used_);
    if (chunks_.size() > 1) {
        chunks_.clear();
        chunks_.emplace_back(peak_);
    }
    used_ = 0;
    total_used_ = 0;
}

// Peak bookkeeping first: the arena merged at the next reset must hold what was in use at once.
// A chunk added since the mark holds nothing live any more, so the last one is reused from its
// start (the rest of the mark's chunk stays unused until the reset merges them).
void CpuOps::release_scratch(const ScratchMark& mark) {
    peak_ = std::max(peak_, total_used_);
    used_ = chunks_.size() == mark.chunks ? mark.used : 0;
    total_used_ = mark.total;
}

void CpuOps::copy_to_host(Tensor src, void* dst) {
    std::memcpy(dst, src.data, src.nbytes());
}
void CpuOps::copy_from_host(const void* src, Tensor dst) {
    std::memcpy(dst.data, src, dst.nbytes());
}

void CpuOps::embed(const Weight& table, int64_t vocab_begin, Tensor out) {
    const auto& ids = step().token_ids;
    const int64_t hidden = table.cols;
    MYRIAD_CHECK(out.dim(0) == static_cast<int64_t>(ids.size()) && out.dim(1) == hidden,
                 "embed output {} for {} tokens of width {}", out.shape_str(), ids.size(), hidden);
    for (size_t t = 0; t < ids.size(); ++t) {
        float* dst = out.ptr<float>() + t * hidden;
        int64_t row = ids[t] - vocab_begin;
        if (row >= 0 && row < table.rows)
            std::memcpy(dst, table.data.ptr<float>() + row * hidden, hidden * sizeof(float));
        else
            std::memset(dst, 0, hidden * sizeof(float));
    }
}

static void rmsnorm_row(const float* x, const float* w, int64_t d, float eps, float* out) {
    double ss = 0.0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[i]) * x[i];
    float variance = static_cast<float>(ss / static_cast<double>(d));
    float inv = 1.0f / std::sqrt(variance + eps);
    for (int64_t i = 0; i < d; ++i) out[i] = w[i] * (x[i] * inv);
}

void CpuOps::rmsnorm(Tensor x, const Weight& w, float eps, Tensor out) {
    const int64_t d = x.dim(-1), rows = rmsnorm_rows(x, w);
    pool_.parallel_for(rows, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
            rmsnorm_row(x.ptr<float>() + r * d, w.data.ptr<float>(), d, eps,
                        out.ptr<float>() + r * d);
    });
}

void CpuOps::linear(Tensor x, const Weight& w, Tensor out) {
    const int64_t k = x.dim(-1), m = x.numel() / k;
    MYRIAD_CHECK(k == w.cols && out.numel() == m * w.rows,
                 "linear: input {} and weight [{}, {}] and output {} disagree", x.shape_str(),
                 w.rows, w.cols, out.shape_str());
    if (w.format == WeightFormat::Dense) {
        sgemm_nt(m, w.rows, k, x.ptr<float>(), k, w.data.ptr<float>(), k, out.ptr<float>(), w.rows);
        return;
    }
    // Quantised: expand a tile of rows (about 1 MiB of F32, at least 64 rows) in parallel, then
    // one FP32 product per tile into its output columns.
    const int64_t tile = std::min(w.rows, std::max<int64_t>(64, (int64_t{1} << 18) / k));
    dequant_tile_.resize(static_cast<size_t>(tile * k));
    for (int64_t r0 = 0; r0 < w.rows; r0 += tile) {
        const int64_t r1 = std::min(w.rows, r0 + tile);
        pool_.parallel_for(r1 - r0, [&](int64_t b, int64_t e) {
            dequantize_rows(w, r0 + b, r0 + e, dequant_tile_.data() + b * k);
        });
        sgemm_nt(m, r1 - r0, k, x.ptr<float>(), k, dequant_tile_.data(), k, out.ptr<float>() + r0,
                 w.rows);
    }
}

void CpuOps::add(Tensor x, Tensor y) {
    MYRIAD_CHECK(x.numel() == y.numel(), "add: {} vs {}", x.shape_str(), y.shape_str());
    float* a = x.ptr<float>();
    const float* b = y.ptr<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) a[i] += b[i];
}

void CpuOps::sample(Tensor logits, const StepSampling& sampling, int32_t* tokens,
                    float* host_logits) {
    const int64_t vocab = logits.dim(-1), n = logits.numel() / vocab;
    MYRIAD_CHECK(static_cast<int64_t>(sampling.rows.size()) == n,
                 "sampling for {} rows, logits of {}", sampling.rows.size(), n);
    for (int64_t i = 0; i < n; ++i) {
        const SampleRow& row = sampling.rows[static_cast<size_t>(i)];
        float* l = logits.ptr<float>() + i * vocab;
        if (row.host) {
            std::copy(l, l + vocab, host_logits + i * vocab);
            continue;
        }
        apply_logit_edits(l, vocab, sampling.edits.data() + row.edits_begin,
                          sampling.edits.data() + row.edits_end);
        if (row.mask >= 0)
            apply_token_mask(l, vocab,
                             sampling.masks.data() + static_cast<size_t>(row.mask) *
                                                         static_cast<size_t>(sampling.mask_words));
        tokens[i] = choose_token(l, vocab, row);
    }
}

void CpuOps::add_rmsnorm(Tensor x, Tensor y, const Weight& w, float eps, Tensor out) {
    const int64_t d = x.dim(-1), rows = add_rmsnorm_rows(x, y, w, out);
    pool_.parallel_for(rows, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
            float* xr = x.ptr<float>() + r * d;
            const float* yr = y.ptr<float>() + r * d;
            for (int64_t i = 0; i < d; ++i) xr[i] += yr[i];
            rmsnorm_row(xr, w.data.ptr<float>(), d, eps, out.ptr<float>() + r * d);
        }
    });
}

void CpuOps::silu_mul(Tensor gate, Tensor up, Tensor out) {
    const float* g = gate.ptr<float>();
    const float* u = up.ptr<float>();
    float* o = out.ptr<float>();
    for (int64_t i = 0, n = gate.numel(); i < n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void CpuOps::gather_logit_rows(Tensor x, Tensor out) {
    const auto& rows = step().logit_rows;
    const int64_t d = x.dim(-1);
    for (size_t i = 0; i < rows.size(); ++i)
        std::memcpy(out.ptr<float>() + i * d, x.ptr<float>() + rows[i] * d, d * sizeof(float));
}

void CpuOps::argmax(Tensor x, Tensor out) {
    const int64_t v = x.dim(-1), n = x.numel() / v;
    for (int64_t r = 0; r < n; ++r) {
        const float* row = x.ptr<float>() + r * v;
        int64_t best = 0;
        for (int64_t i = 1; i < v; ++i)
            if (row[i] > row[best]) best = i;
        out.ptr<int32_t>()[r] = static_cast<int32_t>(best);
    }
}

}  // namespace myriad
