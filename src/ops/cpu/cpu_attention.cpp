// MLA on the CPU: rotary embedding, the paged latent cache, and attention in the naive
// (prefill) and absorbed (decode) forms of reference.md §1.3 and §1.6.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "util/error.h"

namespace myriad {

void rope_rotate(float* x, int64_t dim, int32_t position, const float* inv_freq,
                 float attention_factor, RopeStyle style) {
    const int64_t half = dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        // As transformers: the angle is a float32 product, cos/sin scaled by the YaRN factor.
        float angle = inv_freq[i] * static_cast<float>(position);
        float c = static_cast<float>(std::cos(static_cast<double>(angle))) * attention_factor;
        float s = static_cast<float>(std::sin(static_cast<double>(angle))) * attention_factor;
        float* a = style == RopeStyle::AdjacentPairs ? x + 2 * i : x + i;
        float* b = style == RopeStyle::AdjacentPairs ? x + 2 * i + 1 : x + i + half;
        float x0 = *a, x1 = *b;
        *a = x0 * c - x1 * s;
        *b = x1 * c + x0 * s;
    }
}

void CpuOps::rope(Tensor q, int64_t offset, const RopeParams& rope) {
    const auto& pos = step().positions;
    const int64_t t_count = q.dim(0), heads = q.dim(1), width = q.dim(2);
    const int64_t dim = rope.inv_freq.numel() * 2;
    MYRIAD_CHECK(offset + dim <= width, "rope columns [{}, {}) outside width {}", offset,
                 offset + dim, width);
    pool_.parallel_for(t_count, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t)
            for (int64_t h = 0; h < heads; ++h)
                rope_rotate(q.ptr<float>() + (t * heads + h) * width + offset, dim, pos[t],
                            rope.inv_freq.ptr<float>(), rope.attention_factor, rope.style);
    });
}

namespace {

uint8_t* cache_entry(const KvLayerView& cache, int64_t slot) {
    const int64_t width = cache.latent_dim + cache.rope_dim;
    return cache.data.ptr<uint8_t>() + slot * width * static_cast<int64_t>(dtype_size(cache.dtype));
}

uint8_t* context_entry(const KvLayerView& cache, const SeqSlice& seq, int64_t position) {
    BlockId block = seq.block_table[static_cast<size_t>(position / cache.block_size)];
    return cache_entry(
        cache, static_cast<int64_t>(block) * cache.block_size + position % cache.block_size);
}

void store_entry(const KvLayerView& cache, uint8_t* dst, const float* v) {
    const int64_t width = cache.latent_dim + cache.rope_dim;
    switch (cache.dtype) {
        case DType::F32:
            std::memcpy(dst, v, width * sizeof(float));
            return;
        case DType::BF16:
            for (int64_t i = 0; i < width; ++i) {
                const uint16_t b = f32_to_bf16(v[i]);
                std::memcpy(dst + 2 * i, &b, 2);
            }
            return;
        case DType::F8_E4M3: {
            const float inv = 1.0f / cache.scale;
            for (int64_t i = 0; i < width; ++i) dst[i] = f32_to_f8e4m3(v[i] * inv);
            return;
        }
        default:
            internal_error("KV cache dtype {} is not F32, BF16 or F8_E4M3",
                           dtype_name(cache.dtype));
    }
}

// A cached entry as F32: the cache itself when it stores F32, else decoded into `tmp`.
const float* load_entry(const KvLayerView& cache, const uint8_t* src, float* tmp) {
    const int64_t width = cache.latent_dim + cache.rope_dim;
    switch (cache.dtype) {
        case DType::F32:
            return reinterpret_cast<const float*>(src);
        case DType::BF16:
            for (int64_t i = 0; i < width; ++i) {
                uint16_t b;
                std::memcpy(&b, src + 2 * i, 2);
                tmp[i] = bf16_to_f32(b);
            }
            return tmp;
        case DType::F8_E4M3: {
            static const std::array<float, 256> table = [] {
                std::array<float, 256> t{};
                for (int i = 0; i < 256; ++i) t[i] = f8e4m3_to_f32(static_cast<uint8_t>(i));
                return t;
            }();
            for (int64_t i = 0; i < width; ++i) tmp[i] = table[src[i]] * cache.scale;
            return tmp;
        }
        default:
            internal_error("KV cache dtype {} is not F32, BF16 or F8_E4M3",
                           dtype_name(cache.dtype));
    }
}

}  // namespace

void CpuOps::mla_cache_append(Tensor ckv, const Weight& norm, float eps, const RopeParams& rope,
                              const KvLayerView& cache) {
    const auto& st = step();
    const int64_t width = cache.latent_dim + cache.rope_dim;
    MYRIAD_CHECK(ckv.dim(-1) == width, "cache append: ckv width {} but cache width {}", ckv.dim(-1),
                 width);
    const int64_t capacity = cache.data.dim(0) * cache.block_size;
    std::vector<float> entry(static_cast<size_t>(width));
    for (int64_t t = 0; t < ckv.dim(0); ++t) {
        int64_t slot = st.slots[t];
        MYRIAD_CHECK(slot >= 0 && slot < capacity, "KV slot {} outside the cache of {} slots", slot,
                     capacity);
        const float* src = ckv.ptr<float>() + t * width;
        float* dst = entry.data();
        const float* w = norm.data.ptr<float>();
        double ss = 0.0;
        for (int64_t i = 0; i < cache.latent_dim; ++i) ss += static_cast<double>(src[i]) * src[i];
        float inv = 1.0f / std::sqrt(static_cast<float>(ss / cache.latent_dim) + eps);
        for (int64_t i = 0; i < cache.latent_dim; ++i) dst[i] = w[i] * (src[i] * inv);
        std::memcpy(dst + cache.latent_dim, src + cache.latent_dim, cache.rope_dim * sizeof(float));
        rope_rotate(dst + cache.latent_dim, cache.rope_dim, st.positions[t],
                    rope.inv_freq.ptr<float>(), rope.attention_factor, rope.style);
        store_entry(cache, cache_entry(cache, slot), dst);
    }
}

void CpuOps::mla_gather_context(const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                Tensor latent, Tensor k_rot) {
    const auto& seqs = step().seqs;
    int64_t row = 0;
    std::vector<float> tmp(static_cast<size_t>(cache.latent_dim + cache.rope_dim));
    for (size_t s = seq_begin; s < seq_end; ++s) {
        for (int64_t p = 0; p < seqs[s].ctx_len; ++p, ++row) {
            const float* e = load_entry(cache, context_entry(cache, seqs[s], p), tmp.data());
            std::memcpy(latent.ptr<float>() + row * cache.latent_dim, e,
                        cache.latent_dim * sizeof(float));
            std::memcpy(k_rot.ptr<float>() + row * cache.rope_dim, e + cache.latent_dim,
                        cache.rope_dim * sizeof(float));
        }
    }
    MYRIAD_CHECK(row == latent.dim(0), "gathered {} context rows into {}", row, latent.dim(0));
}

void CpuOps::mla_gather_context_piece(const KvLayerView& cache, const ContextPiece& piece,
                                      Tensor latent, Tensor k_rot) {
    const auto& st = step();
    MYRIAD_CHECK(piece.seq < st.seqs.size() && piece.begin >= 0 && piece.begin <= piece.end &&
                     piece.end <= st.seqs[piece.seq].ctx_len,
                 "context piece [{}, {}) of sequence {} outside the step's {} sequences or that "
                 "sequence's context",
                 piece.begin, piece.end, piece.seq, st.seqs.size());
    MYRIAD_CHECK(latent.dim(0) == piece.size() && k_rot.dim(0) == piece.size(),
                 "gather {} context rows into {} and {}", piece.size(), latent.shape_str(),
                 k_rot.shape_str());
    std::vector<float> tmp(static_cast<size_t>(cache.latent_dim + cache.rope_dim));
    for (int64_t p = piece.begin; p < piece.end; ++p) {
        const int64_t row = p - piece.begin;
        const float* e = load_entry(cache, context_entry(cache, st.seqs[piece.seq], p), tmp.data());
        std::memcpy(latent.ptr<float>() + row * cache.latent_dim, e,
                    cache.latent_dim * sizeof(float));
        std::memcpy(k_rot.ptr<float>() + row * cache.rope_dim, e + cache.latent_dim,
                    cache.rope_dim * sizeof(float));
    }
}

namespace {
// softmax over scores[0..n) in place; returns the log-sum-exp of the scores (-inf when n is 0).
// As torch: subtract the max, exp, divide.
float softmax_inplace(float* scores, int64_t n) {
    if (n == 0) return -INFINITY;
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, scores[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
    }
    float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) scores[j] *= inv;
    return static_cast<float>(static_cast<double>(mx) + std::log(sum));
}

struct QueryRef {
    int64_t row;       // row in the batch
    size_t seq;        // index in step.seqs
    int64_t ctx_base;  // first gathered context row of the sequence (naive form)
};

std::vector<QueryRef> query_rows(const StepInput& st, size_t seq_begin, size_t seq_end) {
    std::vector<QueryRef> refs;
    int64_t ctx_base = 0;
    for (size_t s = seq_begin; s < seq_end; ++s) {
        const SeqSlice& seq = st.seqs[s];
        for (int64_t i = 0; i < seq.q_len; ++i) refs.push_back({seq.q_begin + i, s, ctx_base});
        ctx_base += seq.ctx_len;
    }
    return refs;
}

// The naive form of one (query row, head) over n gathered context rows from `first`: o [dv] =
// softmax(scores) · values; returns the scores' log-sum-exp (-inf and o = 0 when n is 0).
float attend_naive(const float* qv, Tensor kv, Tensor k_rot, int64_t first, int64_t n, int64_t h,
                   int64_t dn, float softmax_scale, std::vector<float>& scores, float* o) {
    const int64_t heads = kv.dim(1), kv_width = kv.dim(2), dr = k_rot.dim(1), dv = kv_width - dn;
    scores.assign(n, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
        const int64_t c = first + j;
        const float* kn = kv.ptr<float>() + (c * heads + h) * kv_width;
        const float* kr = k_rot.ptr<float>() + c * dr;
        float s = 0.0f;
        for (int64_t d = 0; d < dn; ++d) s += qv[d] * kn[d];
        for (int64_t d = 0; d < dr; ++d) s += qv[dn + d] * kr[d];
        scores[j] = s * softmax_scale;
    }
    const float lse = softmax_inplace(scores.data(), n);
    std::fill(o, o + dv, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
        const float* v = kv.ptr<float>() + ((first + j) * heads + h) * kv_width + dn;
        for (int64_t d = 0; d < dv; ++d) o[d] += scores[j] * v[d];
    }
    return lse;
}
}  // namespace

void CpuOps::mla_attention_naive(Tensor q, Tensor kv, Tensor k_rot, size_t seq_begin,
                                 size_t seq_end, float softmax_scale, Tensor out) {
    const auto& st = step();
    const int64_t heads = q.dim(1), dq = q.dim(2), dr = k_rot.dim(1), dn = dq - dr;
    const int64_t dv = out.dim(2), kv_width = kv.dim(2);
    MYRIAD_CHECK(kv_width == dn + dv, "naive attention: kv width {} != {} + {}", kv_width, dn, dv);
    const auto refs = query_rows(st, seq_begin, seq_end);
    const int64_t jobs = static_cast<int64_t>(refs.size()) * heads;
    pool_.parallel_for(jobs, [&](int64_t b, int64_t e) {
        std::vector<float> scores;
        for (int64_t job = b; job < e; ++job) {
            const QueryRef& ref = refs[job / heads];
            const int64_t h = job % heads;
            const int64_t n = st.positions[ref.row] + 1;  // causal: context positions 0..pos
            attend_naive(q.ptr<float>() + (ref.row * heads + h) * dq, kv, k_rot, ref.ctx_base, n, h,
                         dn, softmax_scale, scores, out.ptr<float>() + (ref.row * heads + h) * dv);
        }
    });
}

void CpuOps::mla_attention_naive_piece(Tensor q, Tensor kv, Tensor k_rot, const ContextPiece& piece,
                                       float softmax_scale, Tensor out, Tensor lse, bool first) {
    const auto& st = step();
    const int64_t heads = q.dim(1), dq = q.dim(2), dr = k_rot.dim(1), dn = dq - dr;
    const int64_t dv = out.dim(2), kv_width = kv.dim(2);
    MYRIAD_CHECK(kv_width == dn + dv, "naive attention: kv width {} != {} + {}", kv_width, dn, dv);
    MYRIAD_CHECK(piece.seq < st.seqs.size() && piece.begin >= 0 && piece.begin <= piece.end &&
                     piece.end <= st.seqs[piece.seq].ctx_len,
                 "context piece [{}, {}) of sequence {} outside the step's {} sequences or that "
                 "sequence's context",
                 piece.begin, piece.end, piece.seq, st.seqs.size());
    const SeqSlice& seq = st.seqs[piece.seq];
    MYRIAD_CHECK(kv.dim(0) == piece.size() && k_rot.dim(0) == piece.size(),
                 "naive attention piece of {} context rows with kv {} and k_rot {}", piece.size(),
                 kv.shape_str(), k_rot.shape_str());
    MYRIAD_CHECK(
        lse.dtype == DType::F32 && lse.ndim == 2 && lse.dim(0) == seq.q_len && lse.dim(1) == heads,
        "naive attention piece: lse {} is not [{}, {}] F32", lse.shape_str(), seq.q_len, heads);
    const int64_t jobs = seq.q_len * heads;
    pool_.parallel_for(jobs, [&](int64_t b, int64_t e) {
        std::vector<float> scores, part(static_cast<size_t>(dv));
        for (int64_t job = b; job < e; ++job) {
            const int64_t i = job / heads, h = job % heads, row = seq.q_begin + i;
            // The keys of the piece this row sees: positions [begin, min(pos + 1, end)).
            const int64_t n = std::max<int64_t>(
                0, std::min<int64_t>(st.positions[row] + 1, piece.end) - piece.begin);
            float* o = out.ptr<float>() + (row * heads + h) * dv;
            float* l = lse.ptr<float>() + i * heads + h;
            if (first) {
                *l = attend_naive(q.ptr<float>() + (row * heads + h) * dq, kv, k_rot, 0, n, h, dn,
                                  softmax_scale, scores, o);
                continue;
            }
            const float l_new = attend_naive(q.ptr<float>() + (row * heads + h) * dq, kv, k_rot, 0,
                                             n, h, dn, softmax_scale, scores, part.data());
            // out = (e^l_old out + e^l_new part) / (e^l_old + e^l_new), in double.
            const double m = std::max(*l, l_new);
            if (m == -INFINITY) continue;  // neither has seen a key
            const double w_old = std::exp(double(*l) - m), w_new = std::exp(double(l_new) - m);
            const double den = w_old + w_new;
            for (int64_t d = 0; d < dv; ++d)
                o[d] = static_cast<float>((w_old * o[d] + w_new * part[d]) / den);
            *l = static_cast<float>(m + std::log(den));
        }
    });
}

void CpuOps::mla_absorb_q(Tensor q, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                          Tensor q_lat) {
    const int64_t t = q.dim(0), heads = q.dim(1), dq = q.dim(2), latent = kv_b.cols;
    MYRIAD_CHECK(kv_b.rows == heads * (nope_dim + v_dim), "kv_b_proj has {} rows, expected {}",
                 kv_b.rows, heads * (nope_dim + v_dim));
    for (int64_t h = 0; h < heads; ++h)
        sgemm_nn(t, latent, nope_dim, q.ptr<float>() + h * dq, heads * dq,
                 kv_b.data.ptr<float>() + h * (nope_dim + v_dim) * latent, latent,
                 q_lat.ptr<float>() + h * latent, heads * latent);
}

void CpuOps::mla_absorb_v(Tensor o_lat, const Weight& kv_b, int64_t nope_dim, int64_t v_dim,
                          Tensor out) {
    const int64_t t = o_lat.dim(0), heads = o_lat.dim(1), latent = kv_b.cols;
    for (int64_t h = 0; h < heads; ++h)
        sgemm_nt(t, v_dim, latent, o_lat.ptr<float>() + h * latent, heads * latent,
                 kv_b.data.ptr<float>() + (h * (nope_dim + v_dim) + nope_dim) * latent, latent,
                 out.ptr<float>() + h * v_dim, heads * v_dim);
}

void CpuOps::mla_attention_absorbed(Tensor q_lat, Tensor q, int64_t nope_dim,
                                    const KvLayerView& cache, size_t seq_begin, size_t seq_end,
                                    float softmax_scale, Tensor o_lat) {
    const auto& st = step();
    const int64_t heads = q.dim(1), dq = q.dim(2), latent = cache.latent_dim, dr = cache.rope_dim;
    MYRIAD_CHECK(dq == nope_dim + dr, "absorbed attention: q width {} != {} + {}", dq, nope_dim,
                 dr);
    const auto refs = query_rows(st, seq_begin, seq_end);
    const int64_t jobs = static_cast<int64_t>(refs.size()) * heads;
    pool_.parallel_for(jobs, [&](int64_t b, int64_t e) {
        std::vector<float> scores, tmp(static_cast<size_t>(latent + dr));
        for (int64_t job = b; job < e; ++job) {
            const QueryRef& ref = refs[job / heads];
            const SeqSlice& seq = st.seqs[ref.seq];
            const int64_t h = job % heads;
            const int64_t n = st.positions[ref.row] + 1;
            const float* ql = q_lat.ptr<float>() + (ref.row * heads + h) * latent;
            const float* qr = q.ptr<float>() + (ref.row * heads + h) * dq + nope_dim;
            scores.assign(n, 0.0f);
            for (int64_t j = 0; j < n; ++j) {
                const float* entry = load_entry(cache, context_entry(cache, seq, j), tmp.data());
                float s = 0.0f;
                for (int64_t d = 0; d < latent; ++d) s += ql[d] * entry[d];
                for (int64_t d = 0; d < dr; ++d) s += qr[d] * entry[latent + d];
                scores[j] = s * softmax_scale;
            }
            softmax_inplace(scores.data(), n);
            float* o = o_lat.ptr<float>() + (ref.row * heads + h) * latent;
            std::fill(o, o + latent, 0.0f);
            for (int64_t j = 0; j < n; ++j) {
                const float* entry = load_entry(cache, context_entry(cache, seq, j), tmp.data());
                for (int64_t d = 0; d < latent; ++d) o[d] += scores[j] * entry[d];
            }
        }
    });
}

}  // namespace myriad
