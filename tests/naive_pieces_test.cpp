// The naive MLA form over pieces of one sequence's context on the CPU backend (the reference the
// GPU is checked against): pieces merged by log-sum-exp must give the whole-context call's
// output, in any order, with rows that see no key of a piece, and their gathers must be the
// matching rows of the whole gather.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "random_step.h"

namespace myriad::testing {
namespace {

// ‖a − b‖ / ‖b‖; infinity when a holds a NaN or an infinity.
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / den);
}

class NaivePieces : public ::testing::Test {
  protected:
    std::vector<float> randn(int64_t n) {
        std::normal_distribution<float> d(0.0f, 1.0f);
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = d(rng);
        return v;
    }
    static Tensor t(std::vector<float>& v, std::initializer_list<int64_t> dims) {
        return Tensor(v.data(), DType::F32, dims);
    }

    // Every sequence of `lens` (q_len, ctx_len) attended as a whole in one call and, sequence by
    // sequence, in pieces of `piece` context tokens (in reverse order when `reverse`), through
    // the naive form; the two outputs and the pieces' lse against a log-sum-exp in double.
    void check(const std::vector<std::pair<int64_t, int64_t>>& lens, int64_t piece, bool reverse) {
        SCOPED_TRACE(::testing::Message()
                     << "pieces of " << piece << (reverse ? ", reversed" : ""));
        const int64_t heads = 3, dn = 16, dr = 8, dv = 12, dq = dn + dr;
        const float scale = 0.3f;
        int64_t blocks = 0, ctx = 0;
        for (auto [q_len, c] : lens) {
            blocks += (c + 15) / 16;
            ctx += c;
        }
        StepInput st = make_step(lens, 16, blocks, rng);
        ops.begin_step(st);
        const int64_t rows = st.num_tokens();
        auto q = randn(rows * heads * dq), kv = randn(ctx * heads * (dn + dv)),
             k_rot = randn(ctx * dr);
        std::vector<float> whole(rows * heads * dv);
        ops.mla_attention_naive(t(q, {rows, heads, dq}), t(kv, {ctx, heads, dn + dv}),
                                t(k_rot, {ctx, dr}), 0, lens.size(), scale,
                                t(whole, {rows, heads, dv}));

        std::vector<float> pieced(whole.size(), NAN), lse_got, lse_want;
        int64_t base = 0;  // the sequence's first row in kv
        for (size_t s = 0; s < lens.size(); ++s) {
            const SeqSlice& seq = st.seqs[s];
            std::vector<float> lse(static_cast<size_t>(seq.q_len * heads), NAN);
            std::vector<int64_t> starts;
            for (int64_t c0 = 0; c0 < seq.ctx_len; c0 += piece) starts.push_back(c0);
            if (reverse) std::reverse(starts.begin(), starts.end());
            for (size_t i = 0; i < starts.size(); ++i) {
                const ContextPiece p{s, starts[i], std::min(seq.ctx_len, starts[i] + piece)};
                Tensor kv_all = t(kv, {ctx, heads, dn + dv}), rot_all = t(k_rot, {ctx, dr});
                ops.mla_attention_naive_piece(
                    t(q, {rows, heads, dq}), kv_all.rows(base + p.begin, base + p.end),
                    rot_all.rows(base + p.begin, base + p.end), p, scale,
                    t(pieced, {rows, heads, dv}), t(lse, {seq.q_len, heads}), i == 0);
            }
            // The whole context's log-sum-exp of each (row, head), in double.
            for (int64_t r = 0; r < seq.q_len; ++r) {
                const int64_t row = seq.q_begin + r, pos = st.positions[row];
                for (int64_t h = 0; h < heads; ++h) {
                    const float* qv = q.data() + (row * heads + h) * dq;
                    std::vector<double> sc;
                    double mx = -INFINITY;
                    for (int64_t j = 0; j <= pos; ++j) {
                        const float* kn = kv.data() + ((base + j) * heads + h) * (dn + dv);
                        const float* kr = k_rot.data() + (base + j) * dr;
                        double d = 0;
                        for (int64_t k = 0; k < dn; ++k) d += double(qv[k]) * kn[k];
                        for (int64_t k = 0; k < dr; ++k) d += double(qv[dn + k]) * kr[k];
                        sc.push_back(d * scale);
                        mx = std::max(mx, sc.back());
                    }
                    double sum = 0;
                    for (double x : sc) sum += std::exp(x - mx);
                    lse_want.push_back(static_cast<float>(mx + std::log(sum)));
                    lse_got.push_back(lse[static_cast<size_t>(r * heads + h)]);
                }
            }
            base += seq.ctx_len;
        }
        EXPECT_LE(rel_err(pieced, whole), 1e-5);
        EXPECT_LE(rel_err(lse_got, lse_want), 1e-5);
    }

    std::mt19937 rng{2024};
    CpuOps ops{2};
};

// Prefill chunks after earlier context (q_len < ctx_len), a whole prompt, and one-token rows;
// pieces of one key, of a few, of more than some sequences' contexts. Early rows of a chunk see
// no key of the later pieces (and, reversed, the first piece taken is one they do not see).
TEST_F(NaivePieces, MergedPiecesEqualTheWholeContext) {
    const std::vector<std::pair<int64_t, int64_t>> lens{{10, 12}, {1, 9}, {20, 20}, {6, 40}};
    for (int64_t piece : {1, 3, 7, 16, 40})
        for (bool reverse : {false, true}) check(lens, piece, reverse);
}

// A row that sees no key of the first piece it is given: out 0 and lse -inf, never NaN; the
// rows that do see keys are attended.
TEST_F(NaivePieces, RowsThatSeeNoKeyTakeNothing) {
    const int64_t heads = 2, dn = 8, dr = 8, dv = 8, dq = dn + dr;
    StepInput st = make_step({{4, 10}}, 16, 1, rng);  // rows at positions 6, 7, 8, 9
    ops.begin_step(st);
    auto q = randn(4 * heads * dq), kv = randn(2 * heads * (dn + dv)), k_rot = randn(2 * dr);
    std::vector<float> out(4 * heads * dv, NAN), lse(4 * heads, NAN);
    ops.mla_attention_naive_piece(t(q, {4, heads, dq}), t(kv, {2, heads, dn + dv}),
                                  t(k_rot, {2, dr}), ContextPiece{0, 8, 10}, 0.5f,
                                  t(out, {4, heads, dv}), t(lse, {4, heads}), true);
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t h = 0; h < heads; ++h) {
            const float l = lse[r * heads + h];
            if (r < 2) {
                EXPECT_EQ(l, -INFINITY) << "row " << r;
                for (int64_t d = 0; d < dv; ++d) EXPECT_EQ(out[(r * heads + h) * dv + d], 0.0f);
            } else {
                EXPECT_TRUE(std::isfinite(l)) << "row " << r;
                for (int64_t d = 0; d < dv; ++d)
                    EXPECT_TRUE(std::isfinite(out[(r * heads + h) * dv + d]));
            }
        }
    // A second piece no row sees changes nothing.
    const auto out_before = out, lse_before = lse;
    ops.mla_attention_naive_piece(t(q, {4, heads, dq}), t(kv, {0, heads, dn + dv}),
                                  t(k_rot, {0, dr}), ContextPiece{0, 10, 10}, 0.5f,
                                  t(out, {4, heads, dv}), t(lse, {4, heads}), false);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], out_before[i]) << i;
    for (size_t i = 0; i < lse.size(); ++i) EXPECT_EQ(lse[i], lse_before[i]) << i;
}

// A piece's gather is the matching rows of the whole context's gather, for each cache dtype.
TEST_F(NaivePieces, GatheredPieceIsTheWholeGathersRows) {
    const int64_t latent = 12, rope = 4, bs = 16;
    const std::vector<std::pair<int64_t, int64_t>> lens{{3, 21}, {50, 50}, {1, 33}};
    StepInput st = make_step(lens, bs, 12, rng);
    ops.begin_step(st);
    for (DType dt : {DType::F32, DType::BF16, DType::F8_E4M3}) {
        SCOPED_TRACE(std::string(dtype_name(dt)));
        KvLayerView cache;
        cache.dtype = dt;
        cache.scale = dt == DType::F8_E4M3 ? 0.05f : 1.0f;
        cache.block_size = bs;
        cache.latent_dim = latent;
        cache.rope_dim = rope;
        cache.data = Tensor(nullptr, dt, {12, bs, latent + rope});
        auto keep = ops.allocate(cache.data);
        std::uniform_int_distribution<int> byte(0, 0x7e);  // no NaN codes (e4m3 0x7f)
        for (size_t i = 0; i < cache.data.nbytes(); ++i)
            cache.data.ptr<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
        const int64_t ctx = 21 + 50 + 33;
        std::vector<float> lat(ctx * latent), rot(ctx * rope);
        ops.mla_gather_context(cache, 0, lens.size(), t(lat, {ctx, latent}), t(rot, {ctx, rope}));
        int64_t base = 0;
        for (size_t s = 0; s < lens.size(); ++s) {
            const int64_t c = lens[s].second;
            for (ContextPiece p : {ContextPiece{s, 0, c}, ContextPiece{s, 1, c - 1},
                                   ContextPiece{s, c / 2, c}, ContextPiece{s, 5, 5}}) {
                std::vector<float> pl(p.size() * latent, NAN), pr(p.size() * rope, NAN);
                ops.mla_gather_context_piece(cache, p, t(pl, {p.size(), latent}),
                                             t(pr, {p.size(), rope}));
                EXPECT_EQ(pl, std::vector<float>(lat.begin() + (base + p.begin) * latent,
                                                 lat.begin() + (base + p.end) * latent));
                EXPECT_EQ(pr, std::vector<float>(rot.begin() + (base + p.begin) * rope,
                                                 rot.begin() + (base + p.end) * rope));
            }
            base += c;
        }
    }
}

}  // namespace
}  // namespace myriad::testing
