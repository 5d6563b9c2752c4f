// CudaOps: weights on the device and the linear layers (register-dequantising kernel for few
// rows, cuBLASLt on BF16 operands for many).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "format/gguf_quants.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/synthetic_weight.h"
#include "util/error.h"

namespace myriad::cuda {

namespace {

// Elements of a weight tile expanded to BF16 for cuBLASLt (64 MiB).
constexpr int64_t kTileElems = int64_t{32} << 20;

struct DeviceWeight {
    DeviceBuffer codes, scales;
};

void upload(void* dst, const void* src, size_t bytes, cudaStream_t s) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "weight upload");
    check_cuda(cudaStreamSynchronize(s), "weight upload");
}

// A skinny product of one matrix group over m dense rows of x [m, k] into out [m, n] (the
// caller sets the matrices).
SkinnyArgs rows_args(const float* x, int64_t m, int64_t k, int64_t n, float* out) {
    SkinnyArgs a;
    a.x = x;
    a.ldx = k;
    a.m = m;
    a.max_rows = m;
    a.n = n;
    a.k = k;
    a.out = out;
    a.ldo = n;
    return a;
}

}  // namespace

QFormat CudaOps::qformat(const Weight& w) {
    switch (w.format) {
        case WeightFormat::Dense:
            MYRIAD_CHECK(w.data.dtype == DType::BF16 && w.data.ndim == 2,
                         "CUDA linear: dense weight {} of {} is not a BF16 matrix",
                         w.data.shape_str(), dtype_name(w.data.dtype));
            return QFormat::Bf16;
        case WeightFormat::Fp8Block:
            return QFormat::Fp8Block;
        case WeightFormat::Nvfp4:
            return QFormat::Nvfp4;
        case WeightFormat::Int4Group:
            return QFormat::Int4;
        case WeightFormat::GgufBlock:
            break;
    }
    internal_error("the CUDA backend has no kernel for {} weights", weight_format_name(w.format));
}

QMatrix CudaOps::matrix(const Weight& w) {
    QMatrix m;
    m.rows = static_cast<int32_t>(w.rows);
    m.cols = static_cast<int32_t>(w.cols);
    if (w.format == WeightFormat::Dense) {
        m.codes = static_cast<const uint8_t*>(w.data.data);
        m.row_bytes = w.cols * 2;
        return m;
    }
    // On this backend a quantised weight's QuantizedData describes its device copy (load_weight).
    const QuantizedData& q = w.quant;
    m.codes = q.codes;
    m.row_bytes = q.code_row_bytes;
    m.scales = q.scales;
    m.scale_stride = q.scale_row_stride;
    m.block_rows = static_cast<int32_t>(q.block_rows);
    m.block_cols = static_cast<int32_t>(q.block_cols);
    m.row_phase = static_cast<int32_t>(q.row_offset);
    m.col_phase = static_cast<int32_t>(q.col_offset);
    m.global_scale = q.global_scale;
    return m;
}

// Dense matrices become BF16 (exact for BF16 checkpoints), vectors (norms, biases) F32.
// Quantised weights keep their codes; the shard's rows and columns are copied to the device
// with their scales (F32, NVFP4's e4m3 bytes as they are), and QuantizedData then describes
// the device copy: row_offset and col_offset become the phase of the shard in its scale blocks.
Weight CudaOps::load_weight(const WeightSource& s) {
    MYRIAD_CHECK(s.row_begin >= 0 && s.row_begin <= s.row_end && s.row_end <= s.src_rows &&
                     s.col_begin >= 0 && s.col_begin <= s.col_end && s.col_end <= s.src_cols,
                 "weight slice rows [{}, {}) cols [{}, {}) outside [{}, {}]", s.row_begin,
                 s.row_end, s.col_begin, s.col_end, s.src_rows, s.src_cols);
    Weight w;
    w.rows = s.row_end - s.row_begin;
    w.cols = s.col_end - s.col_begin;
    const SyntheticValues& sv = s.synthetic;
    const bool synthetic = sv.seed != 0;  // generated on the device: no host copy
    if (synthetic && s.format == WeightFormat::Int4Group) {  // generated on the host (tests)
        std::shared_ptr<void> keep;
        Weight hw = load_weight(materialize_synthetic(s, keep));
        synchronize("synthetic weight");
        return hw;
    }
    if (s.format == WeightFormat::Dense && synthetic) {
        const bool vector = s.src_rows == 1;
        MYRIAD_CHECK(vector || w.cols % 8 == 0,
                     "CUDA backend: matrix of {} columns is not a multiple of 8", w.cols);
        auto buf = std::make_shared<DeviceBuffer>(
            std::max<size_t>(static_cast<size_t>(w.rows * w.cols) * (vector ? 4 : 2), 1));
        synthesize(vector ? SynthKind::DenseF32 : SynthKind::DenseBf16, sv.seed, sv.center,
                   sv.amplitude, w.rows, w.cols, s.src_cols, s.row_begin, s.col_begin, buf->data(),
                   stream_);
        check("synthetic weight");
        synchronize("synthetic weight");
        w.data =
            Tensor(buf->data(), vector ? DType::F32 : DType::BF16, {w.rows, w.cols}, Device::Cuda);
        w.storage = buf;
        return w;
    }
    if (s.format == WeightFormat::Dense) {
        const size_t esize = dtype_size(s.dtype);
        const auto* base = static_cast<const uint8_t*>(s.data);
        std::vector<float> row(static_cast<size_t>(w.cols));
        if (s.src_rows == 1) {  // a vector: F32
            convert_to_f32(s.dtype, base + s.col_begin * esize, row.data(), row.size());
            auto buf = std::make_shared<DeviceBuffer>(std::max<size_t>(row.size() * 4, 1));
            upload(buf->data(), row.data(), row.size() * 4, stream_);
            w.data = Tensor(buf->data(), DType::F32, {w.rows, w.cols}, Device::Cuda);
            w.storage = buf;
            return w;
        }
        MYRIAD_CHECK(w.cols % 8 == 0, "CUDA backend: matrix of {} columns is not a multiple of 8",
                     w.cols);
        auto buf = std::make_shared<DeviceBuffer>(std::max<size_t>(w.rows * w.cols * 2, 1));
        // Row r of the shard as BF16 at `out` (a BF16 checkpoint's bits as they are).
        auto pack = [&](int64_t r, uint16_t* out) {
            const uint8_t* src = base + ((s.row_begin + r) * s.src_cols + s.col_begin) * esize;
            if (s.dtype == DType::BF16) {
                std::memcpy(out, src, static_cast<size_t>(w.cols) * 2);
                return;
            }
            convert_to_f32(s.dtype, src, row.data(), row.size());
            for (int64_t c = 0; c < w.cols; ++c) out[c] = ::myriad::f32_to_bf16(row[c]);
        };
        if (staging_on_) {
            staging_.upload_rows(buf->data(), w.rows, static_cast<size_t>(w.cols) * 2,
                                 [&](int64_t first, int64_t count, uint8_t* host) {
                                     auto* h = reinterpret_cast<uint16_t*>(host);
                                     for (int64_t i = 0; i < count; ++i)
                                         pack(first + i, h + i * w.cols);
                                 });
            staging_.order_before(stream_);
        } else {
            std::vector<uint16_t> host(static_cast<size_t>(w.rows * w.cols));
            for (int64_t r = 0; r < w.rows; ++r) pack(r, host.data() + r * w.cols);
            upload(buf->data(), host.data(), host.size() * 2, stream_);
        }
        w.data = Tensor(buf->data(), DType::BF16, {w.rows, w.cols}, Device::Cuda);
        w.storage = buf;
        return w;
    }

    if (s.format == WeightFormat::GgufBlock) {
        // No CUDA kernels read ggml blocks: the shard is dequantised on the host at load and
        // held as BF16 (F32 for a vector), as a dense checkpoint's would be.
        const QuantizedData& q = s.quant;
        const auto type = static_cast<GgufType>(q.gguf_type);
        std::vector<float> row(static_cast<size_t>(w.cols));
        auto dequant = [&](int64_t r) {
            gguf_dequantize_range(type, q.codes + (s.row_begin + r) * q.code_row_bytes, s.col_begin,
                                  w.cols, row.data());
        };
        if (s.src_rows == 1) {
            dequant(0);
            auto buf = std::make_shared<DeviceBuffer>(std::max<size_t>(row.size() * 4, 1));
            upload(buf->data(), row.data(), row.size() * 4, stream_);
            w.data = Tensor(buf->data(), DType::F32, {w.rows, w.cols}, Device::Cuda);
            w.storage = buf;
            return w;
        }
        MYRIAD_CHECK(w.cols % 8 == 0, "CUDA backend: matrix of {} columns is not a multiple of 8",
                     w.cols);
        std::vector<uint16_t> host(static_cast<size_t>(w.rows * w.cols));
        for (int64_t r = 0; r < w.rows; ++r) {
            dequant(r);
            for (int64_t c = 0; c < w.cols; ++c)
                host[r * w.cols + c] = ::myriad::f32_to_bf16(row[c]);
        }
        auto buf = std::make_shared<DeviceBuffer>(std::max<size_t>(host.size() * 2, 1));
        upload(buf->data(), host.data(), host.size() * 2, stream_);
        w.data = Tensor(buf->data(), DType::BF16, {w.rows, w.cols}, Device::Cuda);
        w.storage = buf;
        return w;
    }
    const QuantizedData& q = s.quant;
    MYRIAD_CHECK(w.cols % 8 == 0 && s.col_begin % 8 == 0,
                 "CUDA backend: quantised shard cols [{}, {}) not aligned to 8", s.col_begin,
                 s.col_end);
    // Codes: bytes per element 1 (FP8) or 1/2 (NVFP4, INT4).
    const bool half_byte = s.format != WeightFormat::Fp8Block;
    const int64_t cb0 = half_byte ? s.col_begin / 2 : s.col_begin;
    const int64_t width = half_byte ? w.cols / 2 : w.cols;
    auto dw = std::make_shared<DeviceWeight>();
    dw->codes = DeviceBuffer(std::max<size_t>(static_cast<size_t>(width * w.rows), 1));
    if (synthetic) {
        synthesize(half_byte ? SynthKind::Nvfp4Codes : SynthKind::Fp8Codes, sv.seed, 0.0f, 0.0f,
                   w.rows, width, q.code_row_bytes, s.row_begin, cb0, dw->codes.data(), stream_);
        check("synthetic weight");
    } else if (staging_on_) {
        staging_.upload_rows(
            dw->codes.data(), w.rows, static_cast<size_t>(width),
            [&](int64_t first, int64_t count, uint8_t* host) {
                for (int64_t i = 0; i < count; ++i)
                    std::memcpy(host + i * width,
                                q.codes + (s.row_begin + first + i) * q.code_row_bytes + cb0,
                                static_cast<size_t>(width));
            });
    } else {
        check_cuda(cudaMemcpy2DAsync(
                       dw->codes.data(), width, q.codes + s.row_begin * q.code_row_bytes + cb0,
                       q.code_row_bytes, width, w.rows, cudaMemcpyHostToDevice, stream_),
                   "weight upload");
    }
    // Scales: the blocks the shard touches.
    const int64_t sr0 = s.row_begin / q.block_rows;
    const int64_t sr1 = w.rows ? (s.row_end - 1) / q.block_rows + 1 : sr0;
    const int64_t sc0 = s.col_begin / q.block_cols;
    const int64_t sc1 = w.cols ? (s.col_end - 1) / q.block_cols + 1 : sc0;
    const int64_t srows = sr1 - sr0, scols = sc1 - sc0;
    const bool e4m3 = s.format == WeightFormat::Nvfp4;
    MYRIAD_CHECK(!e4m3 || q.scale_dtype == DType::F8_E4M3, "NVFP4 scales of dtype {}",
                 dtype_name(q.scale_dtype));
    std::vector<uint8_t> sh(static_cast<size_t>(srows * scols * (e4m3 ? 1 : 4)));
    for (int64_t r = 0; r < srows && !synthetic; ++r)
        for (int64_t c = 0; c < scols; ++c) {
            if (e4m3) {
                sh[r * scols + c] = q.scales[(sr0 + r) * q.scale_row_stride + sc0 + c];
            } else {
                const float f = quant_scale(q, sr0 + r, sc0 + c);
                std::memcpy(&sh[(r * scols + c) * 4], &f, 4);
            }
        }
    dw->scales = DeviceBuffer(std::max<size_t>(sh.size(), 1));
    if (synthetic) {
        synthesize(e4m3 ? SynthKind::Nvfp4Scales : SynthKind::Fp8Scales, sv.seed, 0.0f,
                   sv.amplitude, srows, scols, q.scale_row_stride, sr0, sc0, dw->scales.data(),
                   stream_);
        check("synthetic weight");
        synchronize("synthetic weight");
    } else if (staging_on_) {
        staging_.upload(dw->scales.data(), sh.data(), sh.size());
        staging_.order_before(stream_);  // the dequantising kernels below, and every step
    } else {
        upload(dw->scales.data(), sh.data(), sh.size(), stream_);
    }

    w.format = s.format;
    w.quant = q;
    w.quant.codes = static_cast<const uint8_t*>(dw->codes.data());
    w.quant.code_row_bytes = width;
    w.quant.scales = static_cast<const uint8_t*>(dw->scales.data());
    w.quant.scale_dtype = e4m3 ? DType::F8_E4M3 : DType::F32;
    w.quant.scale_row_stride = scols;
    w.quant.row_offset = s.row_begin % q.block_rows;
    w.quant.col_offset = s.col_begin % q.block_cols;
    w.storage = dw;
    if (s.to_dense) {  // weights the ops read directly (kv_b_proj): BF16
        auto buf = std::make_shared<DeviceBuffer>(static_cast<size_t>(w.rows * w.cols * 2));
        dequant_bf16(qformat(w), matrix(w), 0, w.rows, static_cast<uint16_t*>(buf->data()),
                     stream_);
        check("dequantise to BF16");
        synchronize("dequantise to BF16");
        Weight d;
        d.rows = w.rows;
        d.cols = w.cols;
        d.data = Tensor(buf->data(), DType::BF16, {w.rows, w.cols}, Device::Cuda);
        d.storage = buf;
        if (choices_.exact) {  // and the low part (exact_low_)
            auto low = std::make_shared<DeviceBuffer>(static_cast<size_t>(w.rows * w.cols * 2));
            dequant_bf16(qformat(w), matrix(w), 0, w.rows, static_cast<uint16_t*>(low->data()),
                         stream_, true);
            check("dequantise to BF16 (low part)");
            synchronize("dequantise to BF16 (low part)");
            Weight l = d;
            l.data = Tensor(low->data(), DType::BF16, {w.rows, w.cols}, Device::Cuda);
            l.storage = low;
            exact_low_[buf->data()] = l;
        }
        return d;
    }
    if (w.rows == 0 || w.cols == 0) return w;
    // The cuBLASLt path's BF16 tile grows here, at load, never inside a step.
    const int64_t tile_rows = std::min<int64_t>(w.rows, std::max<int64_t>(8, kTileElems / w.cols));
    const size_t elems = static_cast<size_t>(tile_rows * w.cols);
    if (elems > dequant_tile_elems_) {
        dequant_tile_ = DeviceBuffer(elems * 2);
        dequant_tile_elems_ = elems;
    }
    return w;
}

void CudaOps::linear(Tensor x, const Weight& w, Tensor out) {
    const int64_t k = x.dim(-1), m = x.numel() / k;
    MYRIAD_CHECK(k == w.cols && out.numel() == m * w.rows,
                 "linear: input {} and weight [{}, {}] and output {} disagree", x.shape_str(),
                 w.rows, w.cols, out.shape_str());
    if (m == 0) return;
    if (m <= choices_.skinny_limit())
        linear_skinny(x, w, out);
    else
        linear_blas(x, w, out);
    if (const Weight* low = exact_low(w)) {
        const ScratchMark mark = mark_scratch();
        Tensor t = scratch(DType::F32, {m, w.rows});
        linear_skinny(x, *low, t);
        add(out, t);
        release_scratch(mark);
    }
}

const Weight* CudaOps::exact_low(const Weight& w) const {
    if (exact_low_.empty() || w.format != WeightFormat::Dense) return nullptr;
    auto it = exact_low_.find(w.data.data);
    return it != exact_low_.end() && it->second.rows == w.rows && it->second.cols == w.cols
               ? &it->second
               : nullptr;
}

void CudaOps::use_split_workspace(SkinnyArgs& a) {
    auto* base = static_cast<uint8_t*>(split_ws_.data());
    a.split_partials = reinterpret_cast<float*>(base);
    a.split_floats = kSplitFloats;
    a.split_counters =
        reinterpret_cast<uint32_t*>(base + static_cast<size_t>(kSplitFloats) * sizeof(float));
    a.split_counter_count = kSplitCounters;
}

void CudaOps::linear_skinny(Tensor x, const Weight& w, Tensor out) {
    const int64_t k = x.dim(-1), m = x.numel() / k;
    MYRIAD_CHECK(reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && k % 8 == 0,
                 "linear: input rows of {} at {} are not 16-byte aligned", k, x.data);
    SkinnyArgs a = rows_args(x.ptr<float>(), m, k, w.rows, out.ptr<float>());
    a.single = matrix(w);
    use_split_workspace(a);
    skinny_linear(qformat(w), a, choices_, stream_);
    if (profile_) {  // per shape, so the costly linears can be told apart
        static std::map<std::pair<int64_t, int64_t>, std::string> labels;
        auto& label = labels[{w.rows, k}];
        if (label.empty()) label = "linear " + std::to_string(w.rows) + "x" + std::to_string(k);
        check(label.c_str());
        return;
    }
    check("linear");
}

void CudaOps::linear_silu_mul(Tensor x, const Weight& gate, const Weight& up, Tensor out) {
    const int64_t k = x.dim(-1), m = x.numel() / k;
    const bool fused = m > 0 && m <= choices_.skinny_limit() && qformat(gate) == qformat(up) &&
                       gate.rows == up.rows && gate.cols == k && up.cols == k &&
                       out.numel() == m * gate.rows &&
                       reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && k % 8 == 0;
    if (!fused) return Ops::linear_silu_mul(x, gate, up, out);
    SkinnyArgs a = rows_args(x.ptr<float>(), m, k, gate.rows, out.ptr<float>());
    a.single = matrix(gate);
    a.single_up = matrix(up);
    a.glu = true;
    use_split_workspace(a);
    skinny_linear(qformat(gate), a, choices_, stream_);
    check("linear_silu_mul");
}

void CudaOps::linear_blas(Tensor x, const Weight& w, Tensor out) {
    const int64_t k = x.dim(-1), m = x.numel() / k, n = w.rows;
    Tensor xb = scratch(DType::BF16, {m, k});
    f32_to_bf16(x.ptr<float>(), xb.ptr<uint16_t>(), m * k, stream_);
    check("linear (convert input)");
    if (w.format == WeightFormat::Dense) {
        qformat(w);
        gemm_bf16(xb.ptr<uint16_t>(), m, k, w.data.ptr<uint16_t>(), n, out.ptr<float>(), n);
        return;
    }
    const QFormat f = qformat(w);
    const QMatrix qm = matrix(w);
    // Tiles of rows a multiple of 8 (32-byte aligned output columns).
    int64_t tile = std::max<int64_t>(8, static_cast<int64_t>(dequant_tile_elems_) / k / 8 * 8);
    tile = std::min(tile, n);
    auto* buf = static_cast<uint16_t*>(dequant_tile_.data());
    for (int64_t r0 = 0; r0 < n; r0 += tile) {
        const int64_t r1 = std::min(n, r0 + tile);
        dequant_bf16(f, qm, r0, r1, buf, stream_);
        check("linear (expand weight tile)");
        gemm_bf16(xb.ptr<uint16_t>(), m, k, buf, r1 - r0, out.ptr<float>() + r0, n);
    }
}

namespace {
uint32_t alignment_of(const void* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    uint32_t a = 256;
    while (a > 1 && v % a != 0) a /= 2;
    return a;
}
}  // namespace

// out (row-major [m, n], row stride ldo, F32) = x [m, k] · w [n, k]^T, both BF16. Column-major
// for cuBLASLt: D [n, m] = op_T(W as [k, n]) · X as [k, m].
void CudaOps::gemm_bf16(const uint16_t* x, int64_t m, int64_t k, const uint16_t* w, int64_t n,
                        float* out, int64_t ldo) {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    auto cleanup = [&] {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (lc) cublasLtMatrixLayoutDestroy(lc);
        if (lb) cublasLtMatrixLayoutDestroy(lb);
        if (la) cublasLtMatrixLayoutDestroy(la);
        if (op) cublasLtMatmulDescDestroy(op);
    };
    try {
        check_cublas(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
        const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        check_cublas(
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
            "transa");
        check_cublas(
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
            "transb");
        check_cublas(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k), "layout A");
        check_cublas(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k), "layout B");
        check_cublas(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, ldo), "layout C");
        check_cublas(cublasLtMatmulPreferenceCreate(&pref), "preference");
        const uint64_t ws = lt_workspace_.size();
        check_cublas(cublasLtMatmulPreferenceSetAttribute(
                         pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                     "workspace");
        const uint32_t align_a = alignment_of(w), align_b = alignment_of(x),
                       align_c = alignment_of(out);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                             &align_a, sizeof align_a);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                             &align_b, sizeof align_b);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                             &align_c, sizeof align_c);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                             &align_c, sizeof align_c);
        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        check_cublas(
            cublasLtMatmulAlgoGetHeuristic(lt_, op, la, lb, lc, lc, pref, 1, &result, &found),
            "heuristic");
        MYRIAD_CHECK(found > 0, "cuBLASLt has no BF16 algorithm for [{}, {}] x [{}, {}]^T", m, k, n,
                     k);
        const float alpha = 1.0f, beta = 0.0f;
        check_cublas(cublasLtMatmul(lt_, op, &alpha, w, la, x, lb, &beta, out, lc, out, lc,
                                    &result.algo, lt_workspace_.data(), ws, stream_),
                     "matmul");
    } catch (...) {
        cleanup();
        throw;
    }
    cleanup();
    check("linear (cuBLASLt)");
}

}  // namespace myriad::cuda
