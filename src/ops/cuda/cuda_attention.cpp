// CudaOps: rotary embedding, the paged latent cache and MLA attention (naive and absorbed).
#include <algorithm>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "util/error.h"

namespace myriad::cuda {

namespace {
constexpr int64_t kMaxValueDim = 512;  // attention_kernel: 4 values per thread of 128
}

KvView CudaOps::kv_view(const KvLayerView& c) const {
    KvView v;
    v.data = c.data.data;
    switch (c.dtype) {
        case DType::F32:
            v.type = KvType::F32;
            break;
        case DType::BF16:
            v.type = KvType::Bf16;
            break;
        case DType::F8_E4M3:
            v.type = KvType::Fp8;
            break;
        default:
            internal_error("KV cache dtype {} is not F32, BF16 or F8_E4M3", dtype_name(c.dtype));
    }
    v.scale = c.scale;
    v.block_size = c.block_size;
    v.latent = c.latent_dim;
    v.rope = c.rope_dim;
    return v;
}

RopeView CudaOps::rope_view(const RopeParams& r) const {
    RopeView v;
    v.inv_freq = r.inv_freq.ptr<float>();
    v.dim = r.inv_freq.numel() * 2;
    v.attention_factor = r.attention_factor;
    v.half_split = r.style == RopeStyle::HalfSplit;
    return v;
}

void CudaOps::rope(Tensor q, int64_t offset, const RopeParams& r) {
    const int64_t dim = r.inv_freq.numel() * 2;
    MYRIAD_CHECK(offset + dim <= q.dim(2), "rope columns [{}, {}) outside width {}", offset,
                 offset + dim, q.dim(2));
    cuda::rope(q.ptr<float>(), q.dim(0), q.dim(1), q.dim(2), offset, rope_view(r), step_view(),
               stream_);
    check("rope");
}

void CudaOps::mla_cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& r,
                               const KvLayerView& cache) {
    cache_append(ckv, norm, eps, r, cache, nullptr, 0);
}

// One launch: the cache append's blocks (one per new token) rotate the token's queries too.
void CudaOps::mla_rope_and_append(Tensor q, int64_t offset, Tensor ckv, const Weight& norm,
                                  float eps, const RopeParams& r, const KvLayerView& cache) {
    const int64_t dim = r.inv_freq.numel() * 2;
    MYRIAD_CHECK(offset + dim <= q.dim(2) && q.dim(0) == ckv.dim(0),
                 "rope columns [{}, {}) of {} queries, width {}, for {} new tokens", offset,
                 offset + dim, q.dim(0), q.dim(2), ckv.dim(0));
    cache_append(ckv, norm, eps, r, cache, &q, offset);
}

void CudaOps::cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& r,
                           const KvLayerView& cache, const Tensor* q, int64_t offset) {
    const auto& st = step();
    const int64_t width = cache.latent_dim + cache.rope_dim;
    MYRIAD_CHECK(ckv.dim(-1) == width, "cache append: ckv width {} but cache width {}", ckv.dim(-1),
                 width);
    MYRIAD_CHECK(r.inv_freq.numel() * 2 == cache.rope_dim, "rope of {} dims for a cache of {}",
                 r.inv_freq.numel() * 2, cache.rope_dim);
    // The append kernel holds a thread's latent elements and rope pair in registers.
    MYRIAD_CHECK(cache.latent_dim <= 1024 && cache.rope_dim <= 512,
                 "cache append: a latent of {} and rope of {} dims (the CUDA kernel takes up to "
                 "1024 and 512)",
                 cache.latent_dim, cache.rope_dim);
    const int64_t capacity = cache.data.dim(0) * cache.block_size;
    for (int64_t t = 0; t < ckv.dim(0); ++t)
        MYRIAD_CHECK(st.slots[t] >= 0 && st.slots[t] < capacity,
                     "KV slot {} outside the cache of {} slots", st.slots[t], capacity);
    cuda::QRope qr;
    if (q) {
        qr.q = q->ptr<float>();
        qr.heads = q->dim(1);
        qr.width = q->dim(2);
        qr.offset = offset;
    }
    cuda::cache_append(ckv.ptr<float>(), ckv.dim(0), norm.data.data, norm.data.dtype == DType::BF16,
                       eps, rope_view(r), kv_view(cache), step_view(), qr, stream_);
    check("mla_cache_append");
}

void CudaOps::mla_gather_context(const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                 Tensor latent, Tensor k_rot) {
    const auto& seqs = step().seqs;
    int64_t rows = 0, max_ctx = 0;
    for (size_t s = seq_begin; s < seq_end; ++s) {
        rows += seqs[s].ctx_len;
        max_ctx = std::max(max_ctx, seqs[s].ctx_len);
    }
    MYRIAD_CHECK(rows == latent.dim(0) && rows == k_rot.dim(0),
                 "gather {} context rows into {} and {}", rows, latent.shape_str(),
                 k_rot.shape_str());
    cuda::gather_context(kv_view(cache), step_view(), static_cast<int64_t>(seq_begin),
                         static_cast<int64_t>(seq_end), 0, max_ctx, latent.ptr<float>(),
                         k_rot.ptr<float>(), stream_);
    check("mla_gather_context");
}

namespace {
void check_piece(const StepInput& st, const ContextPiece& p) {
    MYRIAD_CHECK(p.seq < st.seqs.size() && p.begin >= 0 && p.begin <= p.end &&
                     p.end <= st.seqs[p.seq].ctx_len,
                 "context piece [{}, {}) of sequence {} outside the step's {} sequences or that "
                 "sequence's context",
                 p.begin, p.end, p.seq, st.seqs.size());
}

// The naive form's arguments common to whole sequences and pieces.
AttnArgs naive_args(Tensor q, Tensor kv, Tensor k_rot, float softmax_scale, Tensor out) {
    AttnArgs a;
    a.q = q.ptr<float>();
    a.heads = q.dim(1);
    a.dq = q.dim(2);
    a.dr = k_rot.dim(1);
    a.nope = a.dq - a.dr;
    a.dv = out.dim(2);
    MYRIAD_CHECK(kv.dim(2) == a.nope + a.dv, "naive attention: kv width {} != {} + {}", kv.dim(2),
                 a.nope, a.dv);
    MYRIAD_CHECK(a.dv <= kMaxValueDim, "attention value width {} above {}", a.dv, kMaxValueDim);
    a.kv = kv.ptr<float>();
    a.k_rot = k_rot.ptr<float>();
    a.scale = softmax_scale;
    a.out = out.ptr<float>();
    return a;
}
}  // namespace

void CudaOps::mla_gather_context_piece(const KvLayerView& cache, const ContextPiece& piece,
                                       Tensor latent, Tensor k_rot) {
    check_piece(step(), piece);
    MYRIAD_CHECK(latent.dim(0) == piece.size() && k_rot.dim(0) == piece.size(),
                 "gather {} context rows into {} and {}", piece.size(), latent.shape_str(),
                 k_rot.shape_str());
    const auto s = static_cast<int64_t>(piece.seq);
    cuda::gather_context(kv_view(cache), step_view(), s, s + 1, piece.begin, piece.end,
                         latent.ptr<float>(), k_rot.ptr<float>(), stream_);
    check("mla_gather_context_piece");
}

void CudaOps::mla_attention_naive(Tensor q, Tensor kv, Tensor k_rot, size_t seq_begin,
                                  size_t seq_end, float softmax_scale, Tensor out) {
    const auto& seqs = step().seqs;
    if (seq_begin >= seq_end) return;
    AttnArgs a = naive_args(q, kv, k_rot, softmax_scale, out);
    a.row_begin = seqs[seq_begin].q_begin;
    a.row_end = seqs[seq_end - 1].q_begin + seqs[seq_end - 1].q_len;
    a.seq_begin = static_cast<int64_t>(seq_begin);
    int64_t max_q_len = 0;
    for (size_t s = seq_begin; s < seq_end; ++s) max_q_len = std::max(max_q_len, seqs[s].q_len);
    if (choices_.prefill_attention == KernelVariant::V1 ||
        !cuda::attention_prefill(a, step_view(), static_cast<int64_t>(seq_end - seq_begin),
                                 max_q_len, stream_))
        cuda::attention_naive(a, step_view(), stream_);
    check("mla_attention_naive");
}

// Both kernels take a piece as they take one whole sequence, with the keys limited to the
// piece's positions and the softmax started from the carried (lse, out).
void CudaOps::mla_attention_naive_piece(Tensor q, Tensor kv, Tensor k_rot,
                                        const ContextPiece& piece, float softmax_scale, Tensor out,
                                        Tensor lse, bool first) {
    const auto& st = step();
    check_piece(st, piece);
    const SeqSlice& seq = st.seqs[piece.seq];
    MYRIAD_CHECK(kv.dim(0) == piece.size() && k_rot.dim(0) == piece.size(),
                 "naive attention piece of {} context rows with kv {} and k_rot {}", piece.size(),
                 kv.shape_str(), k_rot.shape_str());
    MYRIAD_CHECK(lse.dtype == DType::F32 && lse.ndim == 2 && lse.dim(0) == seq.q_len &&
                     lse.dim(1) == q.dim(1),
                 "naive attention piece: lse {} is not [{}, {}] F32", lse.shape_str(), seq.q_len,
                 q.dim(1));
    AttnArgs a = naive_args(q, kv, k_rot, softmax_scale, out);
    a.row_begin = seq.q_begin;
    a.row_end = seq.q_begin + seq.q_len;
    a.seq_begin = static_cast<int64_t>(piece.seq);
    a.ctx_begin = piece.begin;
    a.ctx_end = piece.end;
    a.lse = lse.ptr<float>();
    a.accumulate = !first;
    if (choices_.prefill_attention == KernelVariant::V1 ||
        !cuda::attention_prefill(a, step_view(), 1, seq.q_len, stream_))
        cuda::attention_naive(a, step_view(), stream_);
    check("mla_attention_naive_piece");
}

void CudaOps::mla_absorb_q(Tensor q, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                           Tensor q_lat) {
    const int64_t heads = q.dim(1);
    MYRIAD_CHECK(kv_b.rows == heads * (nope_dim + v_dim), "kv_b_proj has {} rows, expected {}",
                 kv_b.rows, heads * (nope_dim + v_dim));
    MYRIAD_CHECK(kv_b.format == WeightFormat::Dense && kv_b.data.dtype == DType::BF16,
                 "kv_b_proj must be held as BF16 on the GPU");
    cuda::absorb_q(q.ptr<float>(), q.dim(0), heads, q.dim(2), kv_b.data.ptr<uint16_t>(), nope_dim,
                   v_dim, kv_b.cols, q_lat.ptr<float>(), stream_);
    check("mla_absorb_q");
    if (const Weight* low = exact_low(kv_b)) {  // exact mode: plus the low part
        const ScratchMark mark = mark_scratch();
        Tensor t = scratch(DType::F32, {q_lat.numel()});
        cuda::absorb_q(q.ptr<float>(), q.dim(0), heads, q.dim(2), low->data.ptr<uint16_t>(),
                       nope_dim, v_dim, kv_b.cols, t.ptr<float>(), stream_);
        check("mla_absorb_q (low part)");
        add(q_lat, t);
        release_scratch(mark);
    }
}

void CudaOps::mla_absorb_v(Tensor o_lat, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                           Tensor out) {
    MYRIAD_CHECK(kv_b.format == WeightFormat::Dense && kv_b.data.dtype == DType::BF16,
                 "kv_b_proj must be held as BF16 on the GPU");
    cuda::absorb_v(o_lat.ptr<float>(), o_lat.dim(0), o_lat.dim(1), kv_b.data.ptr<uint16_t>(),
                   nope_dim, v_dim, kv_b.cols, out.ptr<float>(), stream_);
    check("mla_absorb_v");
    if (const Weight* low = exact_low(kv_b)) {  // exact mode: plus the low part
        const ScratchMark mark = mark_scratch();
        Tensor t = scratch(DType::F32, {out.numel()});
        cuda::absorb_v(o_lat.ptr<float>(), o_lat.dim(0), o_lat.dim(1), low->data.ptr<uint16_t>(),
                       nope_dim, v_dim, kv_b.cols, t.ptr<float>(), stream_);
        check("mla_absorb_v (low part)");
        add(out, t);
        release_scratch(mark);
    }
}

void CudaOps::mla_attention_absorbed(Tensor q_lat, Tensor q, int64_t nope_dim,
                                     const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                     float softmax_scale, Tensor o_lat) {
    const auto& seqs = step().seqs;
    if (seq_begin >= seq_end) return;
    MYRIAD_CHECK(q.dim(2) == nope_dim + cache.rope_dim, "absorbed attention: q width {} != {} + {}",
                 q.dim(2), nope_dim, cache.rope_dim);
    MYRIAD_CHECK(cache.latent_dim <= kMaxValueDim, "latent width {} above {}", cache.latent_dim,
                 kMaxValueDim);
    AttnArgs a;
    a.q = q_lat.ptr<float>();
    a.q_rope = q.ptr<float>();
    a.heads = q.dim(1);
    a.dq = q.dim(2);
    a.nope = nope_dim;
    a.dv = cache.latent_dim;
    a.cache = kv_view(cache);
    a.row_begin = seqs[seq_begin].q_begin;
    a.row_end = seqs[seq_end - 1].q_begin + seqs[seq_end - 1].q_len;
    a.seq_begin = static_cast<int64_t>(seq_begin);
    for (size_t i = seq_begin; i < seq_end; ++i) a.context = std::max(a.context, seqs[i].ctx_len);
    a.scale = softmax_scale;
    a.out = o_lat.ptr<float>();
    // Few blocks (small decode batches): split the keys over several blocks each so the
    // multiprocessors fill (attention_splits; fixed by the shape: a captured graph keeps it).
    const int64_t pairs = (a.row_end - a.row_begin) * a.heads;
    if (!decode_attention_takes(a, choices_))
        bad_input(
            "absorbed attention on the GPU: a latent cache of kv_lora_rank {} and "
            "qk_rope_head_dim {} ({}-byte elements) is not a layout its kernels take (kv_lora_rank "
            "a multiple of 4 up to 1024, entries a multiple of 16 bytes); use --device cpu",
            cache.latent_dim, cache.rope_dim,
            a.cache.type == KvType::F32 ? 4 : (a.cache.type == KvType::Bf16 ? 2 : 1));
    a.splits = attention_splits(a, choices_);
    Tensor part;
    if (a.splits > 1) {
        a.part_stride = (a.dv + 2 + 3) / 4 * 4;
        part = scratch(DType::F32, {pairs * a.splits * a.part_stride});
        a.part = part.ptr<float>();
    }
    cuda::attention_absorbed(a, step_view(), choices_, stream_);
    check("mla_attention_absorbed");
}

}  // namespace myriad::cuda
