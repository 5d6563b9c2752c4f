// Every CUDA op against the CPU op on fresh random data: ‖gpu − cpu‖ / ‖cpu‖ ≤ 1e-4 where the
// GPU computes in F32, ≤ 1e-2 where it rounds to BF16 (cuBLASLt inputs, BF16/FP8 caches).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "gpu_test_util.h"
#include "random_step.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

constexpr double kF32Tol = 1e-4, kBf16Tol = 1e-2;

// The backend's kernel choices changed by `change` for the scope (KernelChoices' forced
// variants: each kernel of a choice on the same weights); the earlier ones come back at the end.
class ScopedChoices {
  public:
    ScopedChoices(cuda::CudaOps& ops, const std::function<void(KernelChoices&)>& change)
        : ops_(ops), saved_(ops.choices()) {
        KernelChoices k = saved_;
        change(k);
        ops_.set_choices(k);
    }
    ~ScopedChoices() { ops_.set_choices(saved_); }
    ScopedChoices(const ScopedChoices&) = delete;
    ScopedChoices& operator=(const ScopedChoices&) = delete;

  private:
    cuda::CudaOps& ops_;
    KernelChoices saved_;
};

// The skinny kernels a decode-size test runs: v1 and v2 (linear_kernels.cu) each.
struct SkinnyVariant : ScopedChoices {
    SkinnyVariant(cuda::CudaOps& ops, int v)
        : ScopedChoices(ops, [v](KernelChoices& k) {
              k.skinny = v == 1 ? KernelVariant::V1 : KernelVariant::V2;
          }) {}
};
constexpr int kSkinnyVariants[] = {1, 2};

TEST_F(GpuOpsTest, EmbedRmsnormAddSiluMul) {
    const int64_t vocab = 50, hidden = 64;
    auto table = randn_bf16(vocab * hidden);
    Weight wc = cpu.load_weight(bf16_source(table, vocab, hidden));
    Weight wg = gpu->load_weight(bf16_source(table, vocab, hidden));
    StepInput st = make_step({{9, 9}}, 16, 4, rng, 70);  // ids beyond 50 + 10: not held, zero
    begin_step(st);
    std::vector<float> ref(9 * hidden);
    cpu.embed(wc, 10, host(ref, {9, hidden}));
    Tensor out = poisoned(DType::F32, {9, hidden});
    gpu->embed(wg, 10, out);
    EXPECT_LE(rel_err(fetch(out), ref), 1e-7);

    auto x = randn(9 * hidden, 3.0f);
    auto normw = randn(hidden);
    Weight nc = cpu.load_weight(f32_vector_source(normw));
    Weight ng = gpu->load_weight(f32_vector_source(normw));
    std::vector<float> nref(x.size());
    cpu.rmsnorm(host(x, {9, hidden}), nc, 1e-6f, host(nref, {9, hidden}));
    Tensor xd = dev(x, {9, hidden});
    gpu->rmsnorm(xd, ng, 1e-6f, xd);  // in place, as the model does for q_a
    EXPECT_LE(rel_err(fetch(xd), nref), kF32Tol);

    auto a = randn(1000), b = randn(1000), c = a;
    Tensor ad = dev(a, {1000}), bd = dev(b, {1000});
    cpu.add(host(c, {1000}), host(b, {1000}));
    gpu->add(ad, bd);
    EXPECT_LE(rel_err(fetch(ad), c), 1e-7);
    std::vector<float> sref(1000);
    cpu.silu_mul(host(a, {1000}), host(b, {1000}), host(sref, {1000}));
    Tensor so = poisoned(DType::F32, {1000});
    gpu->silu_mul(dev(a, {1000}), bd, so);
    EXPECT_LE(rel_err(fetch(so), sref), 1e-6);
}

// The residual add fused with the next norm, against the CPU's add then rmsnorm, with an F32
// and a BF16 norm weight (checkpoints carry either), rows of both register kernels (up to 8 and
// 32 elements a thread: 2048 is Moonlight's, 7168 Kimi-K2's) and one longer than those.
TEST_F(GpuOpsTest, AddRmsnormFused) {
    for (int64_t hidden : {64, 2048, 7168, 9000}) {
        for (bool bf16 : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "hidden " << hidden << (bf16 ? " bf16" : " f32"));
            const int64_t rows = 5;
            auto x = randn(rows * hidden, 2.0f), y = randn(rows * hidden);
            auto wf = randn(hidden);
            auto wb = randn_bf16(hidden);
            WeightSource src = bf16 ? bf16_source(wb, 1, hidden) : f32_vector_source(wf);
            Weight wc = cpu.load_weight(src), wg = gpu->load_weight(src);
            std::vector<float> xref = x, nref(x.size());
            cpu.add(host(xref, {rows, hidden}), host(y, {rows, hidden}));
            cpu.rmsnorm(host(xref, {rows, hidden}), wc, 1e-5f, host(nref, {rows, hidden}));
            Tensor xd = dev(x, {rows, hidden}), yd = dev(y, {rows, hidden});
            Tensor out = poisoned(DType::F32, {rows, hidden});
            gpu->add_rmsnorm(xd, yd, wg, 1e-5f, out);
            EXPECT_LE(rel_err(fetch(xd), xref), 1e-7);
            EXPECT_LE(rel_err(fetch(out), nref), kF32Tol);
        }
    }
}

TEST_F(GpuOpsTest, GatherLogitRowsAndArgmax) {
    StepInput st = make_step({{1, 5}, {7, 7}, {3, 10}}, 16, 8, rng);
    begin_step(st);
    const int64_t t = st.num_tokens(), v = 3000;
    auto x = randn(t * v);
    // A tie in row 0: the lowest index must win on both backends.
    const auto mx = *std::max_element(x.begin(), x.begin() + v);
    x[17] = mx + 1.0f;
    x[2000] = mx + 1.0f;
    std::vector<float> rows(3 * v);
    cpu.gather_logit_rows(host(x, {t, v}), host(rows, {3, v}));
    Tensor rd = poisoned(DType::F32, {3, v});
    gpu->gather_logit_rows(dev(x, {t, v}), rd);
    EXPECT_EQ(fetch(rd), rows);
    std::vector<int32_t> ids_ref(t);
    cpu.argmax(host(x, {t, v}), Tensor(ids_ref.data(), DType::I32, {t}));
    Tensor ids = poisoned(DType::I32, {t});
    gpu->argmax(dev(x, {t, v}), ids);
    EXPECT_EQ(fetch_i32(ids), ids_ref);
    EXPECT_EQ(ids_ref[0], 17);
}

// Dense BF16 and the quantised formats; ≤ 16 rows run the F32 register-dequantising kernel,
// more rows cuBLASLt on BF16 inputs. The quantised weight is a shard (rows and columns inside
// the checkpoint tensor) so scale indices use the shard's phase in its blocks.
class GpuLinear : public GpuOpsTest,
                  public ::testing::WithParamInterface<std::tuple<WeightFormat, int64_t>> {};

TEST_P(GpuLinear, MatchesCpu) {
    const auto [format, m] = GetParam();
    const int64_t n = 200, k = 384;
    std::vector<uint16_t> dense;
    QuantMatrix qm;
    WeightSource src;
    if (format == WeightFormat::Dense) {
        dense = randn_bf16(n * k, 0.05f);
        src = bf16_source(dense, n, k);
    } else {
        qm = random_quant(format, n + 72, k + 128, rng);
        src = qm.src;
        src.row_begin = 40;  // fp8 rows 40..239: two scale blocks, phase 40
        src.row_end = 40 + n;
        src.col_begin = 128;
        src.col_end = 128 + k;
    }
    Weight wc = cpu.load_weight(src), wg = gpu->load_weight(src);
    auto x = randn(m * k);
    std::vector<float> ref(m * n);
    cpu.linear(host(x, {m, k}), wc, host(ref, {m, n}));
    for (int v : kSkinnyVariants) {
        SkinnyVariant variant(*gpu, v);
        Tensor out = poisoned(DType::F32, {m, n});
        gpu->linear(dev(x, {m, k}), wg, out);
        const double err = rel_err(fetch(out), ref);
        EXPECT_LE(err, m <= cuda::kSkinnyRows ? kF32Tol : kBf16Tol)
            << weight_format_name(format) << " m " << m << " skinny v" << v;
    }
    // The kept comparison choices: the first skinny version (one weight load a lane, 16-row
    // passes) and early launch off.
    for (auto [single, pdl] : {std::pair{true, true}, std::pair{false, false}}) {
        ScopedChoices chosen(*gpu, [single = single, pdl = pdl](KernelChoices& kc) {
            kc.skinny_single_load = single;
            kc.pdl = pdl;
        });
        Tensor out = poisoned(DType::F32, {m, n});
        gpu->linear(dev(x, {m, k}), wg, out);
        EXPECT_LE(rel_err(fetch(out), ref), m <= cuda::kSkinnyRows ? kF32Tol : kBf16Tol)
            << weight_format_name(format) << " m " << m << " single load " << single << " pdl "
            << pdl;
    }
}

// The gated half of an MLP: one skinny launch over both weights up to kSkinnyRows rows, the
// default (linear, linear, silu_mul on cuBLASLt) past them.
TEST_P(GpuLinear, SiluMulMatchesCpu) {
    const auto [format, m] = GetParam();
    const int64_t n = 256, k = 512;
    std::vector<uint16_t> dense_g, dense_u;
    QuantMatrix qg, qu;
    WeightSource sg, su;
    if (format == WeightFormat::Dense) {
        dense_g = randn_bf16(n * k, 0.05f);
        dense_u = randn_bf16(n * k, 0.05f);
        sg = bf16_source(dense_g, n, k);
        su = bf16_source(dense_u, n, k);
    } else {
        qg = random_quant(format, n, k, rng);
        qu = random_quant(format, n, k, rng);
        sg = qg.src;
        su = qu.src;
    }
    Weight gc = cpu.load_weight(sg), uc = cpu.load_weight(su);
    Weight gg = gpu->load_weight(sg), ug = gpu->load_weight(su);
    auto x = randn(m * k);
    std::vector<float> ref(m * n);
    cpu.linear_silu_mul(host(x, {m, k}), gc, uc, host(ref, {m, n}));
    for (int v : kSkinnyVariants) {
        SkinnyVariant variant(*gpu, v);
        Tensor out = poisoned(DType::F32, {m, n});
        gpu->linear_silu_mul(dev(x, {m, k}), gg, ug, out);
        const double err = rel_err(fetch(out), ref);
        EXPECT_LE(err, m <= cuda::kSkinnyRows ? kF32Tol : kBf16Tol)
            << weight_format_name(format) << " m " << m << " skinny v" << v;
    }
}

// The shapes where v2 changes course, against the CPU, plain and gated, at 1 and 3 rows, for
// BF16 (8-element segments) and the quantised formats:
// K over several rounds of 2048 with a partial last one (4160, 2080), K of one partial round
// (96), K v2 cannot split into 32-code segments (208, 48: v1 for the 4-bit formats, v2 for
// FP8's 16-code ones), column counts that leave part of
// the last block idle (37, 45), and an NVFP4 shard whose first column is inside a scale block
// (phase 8: v1 instead).
TEST_F(GpuOpsTest, SkinnyV2Shapes) {
    struct Shape {
        int64_t n, k, col_begin;
    };
    const Shape shapes[] = {{37, 4160, 0}, {45, 2080, 0}, {64, 96, 0},
                            {37, 208, 0},  {40, 48, 0},   {33, 256, 8}};
    for (WeightFormat format : {WeightFormat::Dense, WeightFormat::Fp8Block, WeightFormat::Nvfp4,
                                WeightFormat::Int4Group}) {
        for (const Shape& sh : shapes) {
            // random_quant's INT4 has whole groups of 32; shards start on a block but NVFP4's.
            if (format == WeightFormat::Int4Group && sh.k % 32 != 0) continue;
            if (sh.col_begin % 16 != 0 && format != WeightFormat::Nvfp4 &&
                format != WeightFormat::Dense)
                continue;
            QuantMatrix qg, qu;
            std::vector<uint16_t> dg, du;  // BF16 (Dense): 8-element segments, any k here
            WeightSource sg, su;
            if (format == WeightFormat::Dense) {
                dg = randn_bf16((sh.n + 8) * (sh.k + 32), 0.05f);
                du = randn_bf16((sh.n + 8) * (sh.k + 32), 0.05f);
                sg = bf16_source(dg, sh.n + 8, sh.k + 32);
                su = bf16_source(du, sh.n + 8, sh.k + 32);
            } else {
                qg = random_quant(format, sh.n + 8, sh.k + 32, rng);
                qu = random_quant(format, sh.n + 8, sh.k + 32, rng);
                sg = qg.src;
                su = qu.src;
            }
            for (WeightSource* src : {&sg, &su}) {
                src->row_begin = 3;  // fp8: scale block phase 3
                src->row_end = 3 + sh.n;
                src->col_begin = sh.col_begin;
                src->col_end = sh.col_begin + sh.k;
            }
            Weight gc = cpu.load_weight(sg), uc = cpu.load_weight(su);
            Weight gg = gpu->load_weight(sg), ug = gpu->load_weight(su);
            for (int64_t m : {1, 3}) {
                auto x = randn(m * sh.k);
                std::vector<float> ref(m * sh.n), ref_glu(m * sh.n);
                cpu.linear(host(x, {m, sh.k}), gc, host(ref, {m, sh.n}));
                cpu.linear_silu_mul(host(x, {m, sh.k}), gc, uc, host(ref_glu, {m, sh.n}));
                for (int v : kSkinnyVariants) {
                    SCOPED_TRACE(::testing::Message()
                                 << weight_format_name(format) << " n " << sh.n << " k " << sh.k
                                 << " col " << sh.col_begin << " m " << m << " skinny v" << v);
                    SkinnyVariant variant(*gpu, v);
                    Tensor out = poisoned(DType::F32, {m, sh.n});
                    gpu->linear(dev(x, {m, sh.k}), gg, out);
                    EXPECT_LE(rel_err(fetch(out), ref), kF32Tol);
                    Tensor out_glu = poisoned(DType::F32, {m, sh.n});
                    gpu->linear_silu_mul(dev(x, {m, sh.k}), gg, ug, out_glu);
                    EXPECT_LE(rel_err(fetch(out_glu), ref_glu), kF32Tol);
                }
            }
        }
    }
}

// Dense products of few columns and large K split K over blocks (KernelChoices::
// skinny_split_blocks; the last block adds the shares in order): Kimi-K2's replicated kv_a and
// router at TP 8, the shared expert's eighth (gated), and an odd share count. Against the CPU with
// the split and without, and a second launch bitwise equal to the first (the counters are back
// at zero, the order of the shares fixed).
TEST_F(GpuOpsTest, SkinnySplitK) {
    struct Shape {
        int64_t n, k;
        bool glu;
    };
    const Shape shapes[] = {
        {576, 7168, false}, {384, 7168, false}, {256, 7168, true}, {37, 4160, true}};
    for (WeightFormat format : {WeightFormat::Dense, WeightFormat::Nvfp4}) {
        for (const Shape& sh : shapes) {
            QuantMatrix qg, qu;
            std::vector<uint16_t> dg, du;
            WeightSource sg, su;
            if (format == WeightFormat::Dense) {
                dg = randn_bf16(sh.n * sh.k, 0.05f);
                du = randn_bf16(sh.n * sh.k, 0.05f);
                sg = bf16_source(dg, sh.n, sh.k);
                su = bf16_source(du, sh.n, sh.k);
            } else {
                qg = random_quant(format, sh.n, sh.k, rng);
                qu = random_quant(format, sh.n, sh.k, rng);
                sg = qg.src;
                su = qu.src;
            }
            Weight gc = cpu.load_weight(sg), uc = cpu.load_weight(su);
            Weight gg = gpu->load_weight(sg), ug = gpu->load_weight(su);
            for (int64_t m : {1, 4, 16}) {
                auto x = randn(m * sh.k);
                std::vector<float> ref(m * sh.n);
                if (sh.glu)
                    cpu.linear_silu_mul(host(x, {m, sh.k}), gc, uc, host(ref, {m, sh.n}));
                else
                    cpu.linear(host(x, {m, sh.k}), gc, host(ref, {m, sh.n}));
                auto run = [&] {
                    Tensor out = poisoned(DType::F32, {m, sh.n});
                    if (sh.glu)
                        gpu->linear_silu_mul(dev(x, {m, sh.k}), gg, ug, out);
                    else
                        gpu->linear(dev(x, {m, sh.k}), gg, out);
                    return fetch(out);
                };
                for (int64_t max_split : {int64_t{1}, int64_t{3}, int64_t{8}}) {
                    SCOPED_TRACE(::testing::Message() << weight_format_name(format) << " n " << sh.n
                                                      << " k " << sh.k << (sh.glu ? " gated" : "")
                                                      << " m " << m << " max split " << max_split);
                    ScopedChoices chosen(
                        *gpu, [max_split](KernelChoices& kc) { kc.skinny_max_split = max_split; });
                    const std::vector<float> first = run();
                    EXPECT_LE(rel_err(first, ref), kF32Tol);
                    const std::vector<float> second = run();
                    EXPECT_EQ(
                        0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)))
                        << "a second launch gave other bits";
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, GpuLinear,
    ::testing::Combine(::testing::Values(WeightFormat::Dense, WeightFormat::Fp8Block,
                                         WeightFormat::Nvfp4, WeightFormat::Int4Group),
                       ::testing::Values(1, 5, 16, 17, 130)));

TEST_F(GpuOpsTest, RopeBothStyles) {
    StepInput st = make_step({{1, 300}, {6, 20}}, 16, 32, rng);
    begin_step(st);
    const int64_t t = st.num_tokens(), h = 3, width = 24, dim = 16;
    std::vector<float> inv(dim / 2);
    for (int64_t i = 0; i < dim / 2; ++i) inv[i] = std::pow(10000.0f, -2.0f * i / dim) * 0.7f;
    for (RopeStyle style : {RopeStyle::AdjacentPairs, RopeStyle::HalfSplit}) {
        RopeParams rc{host(inv, {dim / 2}), 1.3f, style};
        RopeParams rg{dev(inv, {dim / 2}), 1.3f, style};
        auto q = randn(t * h * width);
        Tensor qd = dev(q, {t, h, width});
        cpu.rope(host(q, {t, h, width}), 8, rc);
        gpu->rope(qd, 8, rg);
        EXPECT_LE(rel_err(fetch(qd), q), 1e-6);
    }
}

struct CachePair {
    KvLayerView cpu, gpu;
};

class GpuCache : public GpuOpsTest, public ::testing::WithParamInterface<DType> {
  protected:
    // The same layer cache on both backends, filled by each backend's own append.
    CachePair make_cache(DType dt, int64_t blocks, int64_t bs, int64_t latent, int64_t rope) {
        CachePair c;
        for (KvLayerView* v : {&c.cpu, &c.gpu}) {
            v->dtype = dt;
            v->scale = dt == DType::F8_E4M3 ? 0.05f : 1.0f;
            v->block_size = bs;
            v->latent_dim = latent;
            v->rope_dim = rope;
            v->data = Tensor(nullptr, dt, {blocks, bs, latent + rope});
        }
        keep.push_back(cpu.allocate(c.cpu.data));
        keep.push_back(gpu->allocate(c.gpu.data));
        return c;
    }
    double tol() const { return GetParam() == DType::F32 ? kF32Tol : kBf16Tol; }
    void append_gather_attend(int64_t latent, int64_t rope, int64_t heads,
                              const std::vector<int64_t>& lens, int64_t rows_per_seq = 0);
};

// Append, gather and absorbed attention over the cache for sequences of `lens` context keys,
// with each decode kernel (KernelChoices::decode_attention and decode_threads). rows_per_seq > 0:
// every sequence's last min(rows_per_seq, context) tokens are the step's rows, as in a step
// verifying drafts (its last token and the draft, causal among them).
void GpuCache::append_gather_attend(int64_t latent, int64_t rope, int64_t heads,
                                    const std::vector<int64_t>& lens, int64_t rows_per_seq) {
    const int64_t bs = 16, nope = 24;
    int64_t blocks = 0;
    for (int64_t n : lens) blocks += (n + bs - 1) / bs;
    CachePair cache = make_cache(GetParam(), blocks + 3, bs, latent, rope);
    std::vector<float> inv(rope / 2);
    for (int64_t i = 0; i < rope / 2; ++i) inv[i] = std::pow(10000.0f, -2.0f * i / rope);
    RopeParams rc{host(inv, {rope / 2}), 1.0f, RopeStyle::AdjacentPairs};
    RopeParams rg{dev(inv, {rope / 2}), 1.0f, RopeStyle::AdjacentPairs};
    auto normw = randn(latent);
    Weight nc = cpu.load_weight(f32_vector_source(normw));
    Weight ng = gpu->load_weight(f32_vector_source(normw));

    // Fill the whole context of each sequence (as prefill does), then decode-style steps.
    std::vector<std::pair<int64_t, int64_t>> fill_lens;
    for (int64_t n : lens) fill_lens.emplace_back(n, n);
    const auto seqs = static_cast<size_t>(lens.size());
    StepInput fill = make_step(fill_lens, bs, blocks + 3, rng);
    begin_step(fill);
    const int64_t t = fill.num_tokens();
    auto ckv = randn(t * (latent + rope), 2.0f);
    // With several sequences the GPU appends through mla_rope_and_append (its queries rotated in
    // the append's launch), with one through mla_cache_append; the CPU makes the two calls.
    const bool fused = seqs > 1;
    auto qf = randn(t * heads * (nope + rope));
    Tensor qf_gpu = dev(qf, {t, heads, nope + rope});
    cpu.mla_rope_and_append(host(qf, {t, heads, nope + rope}), nope, host(ckv, {t, latent + rope}),
                            nc, 1e-6f, rc, cache.cpu);
    if (fused) {
        gpu->mla_rope_and_append(qf_gpu, nope, dev(ckv, {t, latent + rope}), ng, 1e-6f, rg,
                                 cache.gpu);
        EXPECT_LE(rel_err(fetch(qf_gpu), qf), 1e-6);
    } else {
        gpu->mla_cache_append(dev(ckv, {t, latent + rope}), ng, 1e-6f, rg, cache.gpu);
    }
    const int64_t ctx = t;
    std::vector<float> lat_ref(ctx * latent), rot_ref(ctx * rope);
    cpu.mla_gather_context(cache.cpu, 0, seqs, host(lat_ref, {ctx, latent}),
                           host(rot_ref, {ctx, rope}));
    Tensor lat = poisoned(DType::F32, {ctx, latent}), rot = poisoned(DType::F32, {ctx, rope});
    gpu->mla_gather_context(cache.gpu, 0, seqs, lat, rot);
    EXPECT_LE(rel_err(fetch(lat), lat_ref), tol());
    EXPECT_LE(rel_err(fetch(rot), rot_ref), tol());
    // Pieces of one sequence's context: its second half, and all of it but the first and last.
    for (size_t s = 0; s < seqs; ++s) {
        const int64_t c = lens[s];
        for (ContextPiece p :
             {ContextPiece{s, c / 2, c}, ContextPiece{s, 1, std::max<int64_t>(1, c - 1)}}) {
            if (p.size() == 0) continue;
            std::vector<float> pl(p.size() * latent), pr(p.size() * rope);
            cpu.mla_gather_context_piece(cache.cpu, p, host(pl, {p.size(), latent}),
                                         host(pr, {p.size(), rope}));
            Tensor gl = poisoned(DType::F32, {p.size(), latent});
            Tensor gr = poisoned(DType::F32, {p.size(), rope});
            gpu->mla_gather_context_piece(cache.gpu, p, gl, gr);
            EXPECT_LE(rel_err(fetch(gl), pl), tol()) << "sequence " << s << " from " << p.begin;
            EXPECT_LE(rel_err(fetch(gr), pr), tol()) << "sequence " << s << " from " << p.begin;
        }
    }

    // Absorbed attention over the cache for the last token of each sequence (decode rows) and,
    // as AttentionMode::Absorbed does, for several rows of one sequence; a lone sequence has one
    // row, as in batch-1 decode (the most splits).
    StepInput dec = fill;
    dec.token_ids.clear();
    dec.positions.clear();
    dec.slots.clear();
    dec.logit_rows.clear();
    int64_t row = 0;
    for (auto& s : dec.seqs) {
        const int64_t q_len = rows_per_seq > 0 ? std::min(rows_per_seq, s.ctx_len)
                                               : (s.ctx_len > 30 && seqs > 1 ? 3 : 1);
        s.draft = q_len - 1;
        for (int64_t i = 0; i < q_len; ++i) {
            dec.token_ids.push_back(1);
            dec.positions.push_back(static_cast<int32_t>(s.ctx_len - q_len + i));
            dec.slots.push_back(0);
        }
        s.q_begin = row;
        s.q_len = q_len;
        row += q_len;
    }
    begin_step(dec);
    const int64_t tq = dec.num_tokens(), dq = nope + rope;
    auto q_lat = randn(tq * heads * latent, 0.3f), q = randn(tq * heads * dq, 0.3f);
    std::vector<float> o_ref(tq * heads * latent);
    cpu.mla_attention_absorbed(host(q_lat, {tq, heads, latent}), host(q, {tq, heads, dq}), nope,
                               cache.cpu, 0, seqs, 0.2f, host(o_ref, {tq, heads, latent}));
    // The default choice, the second version with four and eight warps a block, and the third
    // (tensor cores, 16 heads a block; a BF16 cache only, the others run the second).
    for (auto [variant, threads] :
         {std::pair{0, 0}, std::pair{2, 128}, std::pair{2, 256}, std::pair{3, 0}}) {
        SCOPED_TRACE(::testing::Message()
                     << "attention variant " << variant << " threads " << threads);
        ScopedChoices chosen(*gpu, [variant = variant, threads = threads](KernelChoices& k) {
            k.decode_attention = static_cast<KernelVariant>(variant);
            k.decode_threads = threads;
        });
        Tensor o = poisoned(DType::F32, {tq, heads, latent});
        gpu->mla_attention_absorbed(dev(q_lat, {tq, heads, latent}), dev(q, {tq, heads, dq}), nope,
                                    cache.gpu, 0, seqs, 0.2f, o);
        // The third version (a BF16 cache) splits queries and weights into two BF16 parts each:
        // about F32's accuracy (2e-6 seen; BF16 queries alone gave 2e-3).
        // (The default takes it from two blocks of 16 heads.)
        const bool mma = GetParam() == DType::BF16 &&
                         (variant == 3 || (variant == 0 && gpu->choices().decode_v3(tq, heads)));
        EXPECT_LE(rel_err(fetch(o), o_ref), mma ? 1e-4 : tol());
    }
}

// Contexts of one to 70 keys (a split or three of the second version), of hundreds over many
// blocks (many splits, several tiles each) and one sequence of 900 (one row: 32 splits), in a
// small shape and in Moonlight's (latent 512 + rope 64, 16 heads: a value quad per thread;
// 16-key tiles for BF16, 8 for F32); for the third version also 20 heads (a partial group of 16)
// and Kimi-K2's 64 (four groups).
TEST_P(GpuCache, AppendGatherAndAbsorbedAttention) {
    const std::vector<int64_t> short_ctx{37, 5, 70, 1}, long_ctx{450, 3, 29, 700}, one{900};
    for (auto [latent, rope, heads] : {std::tuple<int64_t, int64_t, int64_t>{64, 16, 4},
                                       std::tuple<int64_t, int64_t, int64_t>{512, 64, 16},
                                       std::tuple<int64_t, int64_t, int64_t>{128, 32, 20},
                                       std::tuple<int64_t, int64_t, int64_t>{512, 64, 64}}) {
        for (const auto* lens : {&short_ctx, &long_ctx, &one}) {
            SCOPED_TRACE(::testing::Message()
                         << "latent " << latent << " rope " << rope << " heads " << heads
                         << " contexts up to " << *std::max_element(lens->begin(), lens->end()));
            append_gather_attend(latent, rope, heads, *lens);
        }
    }
}

// Verification steps (speculative decoding): every sequence brings 1 to 5 rows (its last token
// and a draft of 0 to 4), each row attending causally to the keys up to its own position, over
// short, long and mixed contexts; the golden checkpoints' latent shapes (kv_lora_rank 32, rope 16
// or 32, 4 or 8 heads), Moonlight's (512 + 64, 16 heads) and Kimi-K2's (64 heads; 8 at TP 8).
TEST_P(GpuCache, DecodeAttentionOfDraftRows) {
    const std::vector<int64_t> mixed{37, 5, 70, 2, 130}, long_ctx{450, 29, 700}, one{900};
    for (auto [latent, rope, heads] : {std::tuple<int64_t, int64_t, int64_t>{32, 16, 4},
                                       std::tuple<int64_t, int64_t, int64_t>{32, 32, 4},
                                       std::tuple<int64_t, int64_t, int64_t>{32, 16, 8},
                                       std::tuple<int64_t, int64_t, int64_t>{512, 64, 16},
                                       std::tuple<int64_t, int64_t, int64_t>{512, 64, 64},
                                       std::tuple<int64_t, int64_t, int64_t>{512, 64, 8}}) {
        for (int64_t rows = 1; rows <= 5; ++rows) {
            for (const auto* lens : {&mixed, &long_ctx, &one}) {
                SCOPED_TRACE(::testing::Message()
                             << "latent " << latent << " rope " << rope << " heads " << heads
                             << " rows a sequence " << rows << " contexts up to "
                             << *std::max_element(lens->begin(), lens->end()));
                append_gather_attend(latent, rope, heads, *lens, rows);
            }
        }
    }
}

// A cache layout no decode kernel takes (the first version, which took any, was deleted): a
// latent width that is not a multiple of 4 stops with the reason, launching nothing, whatever
// the choices; the next step runs.
TEST_P(GpuCache, DecodeAttentionRefusesLayoutsNoKernelTakes) {
    const int64_t latent = 30, rope = 16, heads = 4, nope = 8, bs = 16;
    CachePair cache = make_cache(GetParam(), 4, bs, latent, rope);
    StepInput st = make_step({{1, 9}, {1, 20}}, bs, 4, rng);
    begin_step(st);
    const int64_t t = st.num_tokens();
    auto q_lat = randn(t * heads * latent), q = randn(t * heads * (nope + rope));
    for (KernelVariant v : {KernelVariant::Auto, KernelVariant::V2, KernelVariant::V3}) {
        ScopedChoices chosen(*gpu, [v](KernelChoices& k) { k.decode_attention = v; });
        Tensor o = poisoned(DType::F32, {t, heads, latent});
        try {
            gpu->mla_attention_absorbed(dev(q_lat, {t, heads, latent}),
                                        dev(q, {t, heads, nope + rope}), nope, cache.gpu, 0, 2,
                                        0.2f, o);
            ADD_FAILURE() << "a latent width of 30 was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.exit_status(), 2) << e.what();
            EXPECT_NE(std::string(e.what()).find("kv_lora_rank 30"), std::string::npos) << e.what();
        }
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuCache,
                         ::testing::Values(DType::F32, DType::BF16, DType::F8_E4M3));

// The naive (prefill) form over sequences [seq_begin, lens.size()) of a step of (q_len, ctx_len)
// sequences (the earlier ones stand for the absorbed form's decode rows: their context is not
// in kv), against the CPU, with both kernels. Only the rows of those sequences are compared.
class GpuNaiveAttention : public GpuOpsTest {
  protected:
    void attend(const std::vector<std::pair<int64_t, int64_t>>& lens, size_t seq_begin,
                int64_t heads, int64_t dn, int64_t dr, int64_t dv, float scale) {
        SCOPED_TRACE(::testing::Message()
                     << lens.size() << " sequences from " << seq_begin << ", heads " << heads
                     << ", nope " << dn << ", rope " << dr << ", value " << dv);
        int64_t blocks = 0;
        for (auto [q_len, ctx] : lens) blocks += (ctx + 15) / 16;
        StepInput st = make_step(lens, 16, blocks, rng);
        begin_step(st);
        const int64_t t = st.num_tokens(), dq = dn + dr;
        int64_t ctx = 0;
        for (size_t s = seq_begin; s < lens.size(); ++s) ctx += lens[s].second;
        const int64_t r0 = st.seqs[seq_begin].q_begin;
        auto q = randn(t * heads * dq), kv = randn(ctx * heads * (dn + dv)),
             k_rot = randn(ctx * dr);
        std::vector<float> ref(t * heads * dv, 0.0f);
        cpu.mla_attention_naive(host(q, {t, heads, dq}), host(kv, {ctx, heads, dn + dv}),
                                host(k_rot, {ctx, dr}), seq_begin, lens.size(), scale,
                                host(ref, {t, heads, dv}));
        const std::vector<float> want(ref.begin() + r0 * heads * dv, ref.end());
        for (int variant : {1, 2}) {
            SCOPED_TRACE(::testing::Message() << "prefill attention variant " << variant);
            ScopedChoices chosen(*gpu, [variant](KernelChoices& k) {
                k.prefill_attention = variant == 1 ? KernelVariant::V1 : KernelVariant::V2;
            });
            Tensor out = poisoned(DType::F32, {t, heads, dv});
            gpu->mla_attention_naive(dev(q, {t, heads, dq}), dev(kv, {ctx, heads, dn + dv}),
                                     dev(k_rot, {ctx, dr}), seq_begin, lens.size(), scale, out);
            const auto got = fetch(out);
            EXPECT_LE(rel_err(std::vector<float>(got.begin() + r0 * heads * dv, got.end()), want),
                      kF32Tol);
        }
    }

    // Sequences [seq_begin, lens.size()) each attended over its own context in pieces of
    // `piece` tokens (the last ones first when `reverse`: the first piece a row is given may
    // hold no key it sees), merged through lse: out and lse against the CPU's, with both
    // kernels; the GPU's out and lse are poisoned first.
    void attend_pieces(const std::vector<std::pair<int64_t, int64_t>>& lens, size_t seq_begin,
                       int64_t heads, int64_t dn, int64_t dr, int64_t dv, float scale,
                       int64_t piece, bool reverse) {
        SCOPED_TRACE(::testing::Message()
                     << lens.size() << " sequences from " << seq_begin << ", heads " << heads
                     << ", nope " << dn << ", rope " << dr << ", value " << dv << ", pieces of "
                     << piece << (reverse ? ", last first" : ""));
        int64_t blocks = 0;
        for (auto [q_len, ctx] : lens) blocks += (ctx + 15) / 16;
        StepInput st = make_step(lens, 16, blocks, rng);
        begin_step(st);
        const int64_t t = st.num_tokens(), dq = dn + dr;
        auto q = randn(t * heads * dq);
        const Tensor q_dev = dev(q, {t, heads, dq});
        struct Seq {
            std::vector<float> kv, k_rot, lse;
            Tensor kv_dev, k_rot_dev;
            std::vector<ContextPiece> pieces;
        };
        std::vector<Seq> seqs(lens.size());
        std::vector<float> ref(t * heads * dv, 0.0f);
        for (size_t s = seq_begin; s < lens.size(); ++s) {
            const int64_t ctx = lens[s].second, q_len = lens[s].first;
            Seq& x = seqs[s];
            x.kv = randn(ctx * heads * (dn + dv));
            x.k_rot = randn(ctx * dr);
            x.lse.assign(static_cast<size_t>(q_len * heads), 0.0f);
            x.kv_dev = dev(x.kv, {ctx, heads, dn + dv});
            x.k_rot_dev = dev(x.k_rot, {ctx, dr});
            for (int64_t c0 = 0; c0 < ctx; c0 += piece)
                x.pieces.push_back({s, c0, std::min(ctx, c0 + piece)});
            if (reverse) std::reverse(x.pieces.begin(), x.pieces.end());
            Tensor kv = host(x.kv, {ctx, heads, dn + dv}), rot = host(x.k_rot, {ctx, dr});
            for (size_t i = 0; i < x.pieces.size(); ++i) {
                const ContextPiece& p = x.pieces[i];
                cpu.mla_attention_naive_piece(
                    host(q, {t, heads, dq}), kv.rows(p.begin, p.end), rot.rows(p.begin, p.end), p,
                    scale, host(ref, {t, heads, dv}), host(x.lse, {q_len, heads}), i == 0);
            }
        }
        const int64_t r0 = st.seqs[seq_begin].q_begin;
        const std::vector<float> want(ref.begin() + r0 * heads * dv, ref.end());
        for (int variant : {1, 2}) {
            SCOPED_TRACE(::testing::Message() << "prefill attention variant " << variant);
            ScopedChoices chosen(*gpu, [variant](KernelChoices& k) {
                k.prefill_attention = variant == 1 ? KernelVariant::V1 : KernelVariant::V2;
            });
            Tensor out = poisoned(DType::F32, {t, heads, dv});
            for (size_t s = seq_begin; s < lens.size(); ++s) {
                Seq& x = seqs[s];
                Tensor lse = poisoned(DType::F32, {lens[s].first, heads});
                for (size_t i = 0; i < x.pieces.size(); ++i) {
                    const ContextPiece& p = x.pieces[i];
                    gpu->mla_attention_naive_piece(q_dev, x.kv_dev.rows(p.begin, p.end),
                                                   x.k_rot_dev.rows(p.begin, p.end), p, scale, out,
                                                   lse, i == 0);
                }
                EXPECT_LE(rel_err(fetch(lse), x.lse), kF32Tol) << "lse of sequence " << s;
            }
            const auto got = fetch(out);
            EXPECT_LE(rel_err(std::vector<float>(got.begin() + r0 * heads * dv, got.end()), want),
                      kF32Tol);
        }
    }
};

// Chunked prefill: each sequence's new rows see earlier context and themselves, causally. The
// second version's tiles are 32 rows by 32 keys: q_len 5, 33, 37, 40 leave partial row tiles,
// contexts of 1, 9, 50, 700 partial key tiles; several sequences of different q_len and ctx_len
// share a call, after decode rows that are not its own.
TEST_F(GpuNaiveAttention, SmallShapes) {
    // value width 20: five quads, fewer than the eight threads of a row
    attend({{4, 50}, {1, 9}, {20, 20}}, 0, 3, 24, 16, 20, 0.15f);
    attend({{1, 7}, {1, 30}, {37, 100}, {1, 1}, {5, 5}, {64, 64}, {40, 700}, {33, 33}}, 2, 3, 16, 8,
           16, 0.2f);
    attend({{1, 1}}, 0, 3, 16, 8, 16, 0.2f);
    // value widths over 128 (eight quads per thread), one of them partial
    attend({{37, 90}, {3, 3}}, 0, 2, 32, 16, 256, 0.1f);
    attend({{37, 90}, {3, 3}}, 0, 2, 32, 16, 136, 0.1f);
    // widths not a multiple of 4: the first version runs for both
    attend({{9, 20}, {3, 3}}, 0, 2, 14, 6, 10, 0.2f);
}

// Moonlight's heads (nope 128 + rope 64, value 128, 16 heads): a 512-token prompt, and chunks
// after earlier context mixed with a decode row.
TEST_F(GpuNaiveAttention, MoonlightShape) {
    const float scale = 1.0f / std::sqrt(192.0f);
    attend({{512, 512}}, 0, 16, 128, 64, 128, scale);
    attend({{1, 300}, {100, 700}, {3, 40}, {1, 1}, {64, 64}}, 1, 16, 128, 64, 128, scale);
}

// Long contexts in pieces (Ops::mla_attention_naive_piece), merged through lse. The second
// version's tiles are 32 rows: with q_len 70 at ctx 100 and pieces of 40 taken last first, the
// first row tile sees no key of the first piece (zero output, lse -inf), and rows 30..39 none
// of the piece [40, 80) while their tile's other rows do.
TEST_F(GpuNaiveAttention, PiecesSmallShapes) {
    for (bool reverse : {false, true}) {
        attend_pieces({{4, 50}, {1, 9}, {20, 20}}, 0, 3, 24, 16, 20, 0.15f, 7, reverse);
        attend_pieces({{1, 7}, {37, 100}, {70, 100}, {5, 5}}, 1, 3, 16, 8, 16, 0.2f, 40, reverse);
        attend_pieces({{3, 12}, {2, 2}}, 0, 2, 16, 8, 16, 0.2f, 1, reverse);  // a key a piece
        attend_pieces({{37, 90}, {3, 3}}, 0, 2, 32, 16, 256, 0.1f, 33, reverse);
        attend_pieces({{9, 20}, {3, 3}}, 0, 2, 14, 6, 10, 0.2f, 6, reverse);  // version 1 only
    }
}

// Moonlight's heads: a 100-token chunk after 600 tokens of context, and a decode row's context,
// in pieces of 256.
TEST_F(GpuNaiveAttention, PiecesMoonlightShape) {
    const float scale = 1.0f / std::sqrt(192.0f);
    for (bool reverse : {false, true})
        attend_pieces({{1, 300}, {100, 700}, {1, 300}}, 1, 16, 128, 64, 128, scale, 256, reverse);
}

// Token counts around the kernels' tile of 8 (one token: a tile of one), and latent widths of one
// and three column blocks (the last partial).
TEST_F(GpuOpsTest, AbsorbQAndV) {
    const int64_t heads = 4, dn = 24, dr = 8, dv = 16;
    for (int64_t latent : {64, 136}) {
        for (int64_t t : {1, 7, 8, 19}) {
            SCOPED_TRACE(::testing::Message() << "t " << t << " latent " << latent);
            auto kvb = randn_bf16(heads * (dn + dv) * latent, 0.1f);
            Weight wc = cpu.load_weight(bf16_source(kvb, heads * (dn + dv), latent));
            Weight wg = gpu->load_weight(bf16_source(kvb, heads * (dn + dv), latent));
            auto q = randn(t * heads * (dn + dr));
            std::vector<float> ref(t * heads * latent);
            cpu.mla_absorb_q(host(q, {t, heads, dn + dr}), wc, dn, dv,
                             host(ref, {t, heads, latent}));
            Tensor ql = poisoned(DType::F32, {t, heads, latent});
            gpu->mla_absorb_q(dev(q, {t, heads, dn + dr}), wg, dn, dv, ql);
            EXPECT_LE(rel_err(fetch(ql), ref), kF32Tol);
            auto o = randn(t * heads * latent);
            std::vector<float> vref(t * heads * dv);
            cpu.mla_absorb_v(host(o, {t, heads, latent}), wc, dn, dv, host(vref, {t, heads, dv}));
            Tensor ov = poisoned(DType::F32, {t, heads, dv});
            gpu->mla_absorb_v(dev(o, {t, heads, latent}), wg, dn, dv, ov);
            EXPECT_LE(rel_err(fetch(ov), vref), kF32Tol);
        }
    }
}

class GpuRoute : public GpuOpsTest, public ::testing::WithParamInterface<int64_t> {};

TEST_P(GpuRoute, SameExpertsAndWeights) {
    const int64_t t = 40, hidden = 64, experts = 32;
    RouterParams p;
    p.n_experts = experts;
    p.top_k = 4;
    p.n_group = GetParam();
    p.topk_group = p.n_group > 1 ? 2 : 1;
    p.routed_scaling_factor = 2.5f;
    auto gate = randn_bf16(experts * hidden, 0.2f);
    auto bias = randn(experts, 0.1f);
    Weight gc = cpu.load_weight(bf16_source(gate, experts, hidden));
    Weight gg = gpu->load_weight(bf16_source(gate, experts, hidden));
    Weight bc = cpu.load_weight(f32_vector_source(bias));
    Weight bg = gpu->load_weight(f32_vector_source(bias));
    auto x = randn(t * hidden);
    std::vector<int32_t> ids_ref(t * p.top_k);
    std::vector<float> w_ref(t * p.top_k);
    cpu.moe_route(host(x, {t, hidden}), gc, bc, p, Tensor(ids_ref.data(), DType::I32, {t, p.top_k}),
                  host(w_ref, {t, p.top_k}));
    Tensor ids = poisoned(DType::I32, {t, p.top_k}), w = poisoned(DType::F32, {t, p.top_k});
    gpu->moe_route(dev(x, {t, hidden}), gg, bg, p, ids, w);
    EXPECT_EQ(fetch_i32(ids), ids_ref);
    EXPECT_LE(rel_err(fetch(w), w_ref), kF32Tol);
}

INSTANTIATE_TEST_SUITE_P(Groups, GpuRoute, ::testing::Values(1, 4));

// Ties, as torch.topk and the CPU's stable sort break them: the lower index first, for groups and
// experts. Every token sees scores in which some groups and experts are exactly equal (a zero
// gate gives sigmoid 0.5 everywhere; the bias repeats values across groups and experts).
TEST_F(GpuOpsTest, RouteBreaksTiesByLowerIndex) {
    const int64_t t = 8, hidden = 64, experts = 32;
    for (int64_t groups : {1, 4, 8}) {
        RouterParams p;
        p.n_experts = experts;
        p.top_k = 5;
        p.n_group = groups;
        p.topk_group = groups > 1 ? groups / 2 : 1;
        std::vector<uint16_t> gate(experts * hidden, 0);
        std::vector<float> bias(experts);
        for (int64_t e = 0; e < experts; ++e) bias[e] = 0.01f * static_cast<float>((e * 7) % 4);
        Weight gc = cpu.load_weight(bf16_source(gate, experts, hidden));
        Weight gg = gpu->load_weight(bf16_source(gate, experts, hidden));
        Weight bc = cpu.load_weight(f32_vector_source(bias));
        Weight bg = gpu->load_weight(f32_vector_source(bias));
        auto x = randn(t * hidden);
        std::vector<int32_t> ids_ref(t * p.top_k);
        std::vector<float> w_ref(t * p.top_k);
        cpu.moe_route(host(x, {t, hidden}), gc, bc, p,
                      Tensor(ids_ref.data(), DType::I32, {t, p.top_k}), host(w_ref, {t, p.top_k}));
        Tensor ids = poisoned(DType::I32, {t, p.top_k}), w = poisoned(DType::F32, {t, p.top_k});
        gpu->moe_route(dev(x, {t, hidden}), gg, bg, p, ids, w);
        EXPECT_EQ(fetch_i32(ids), ids_ref) << groups << " groups";
        // The expected order by hand for the first token: bias 0.03 at e = 1, 5, 9, ...
        // (e * 7 % 4 == 3), then 0.02 at e = 2, 6, ...; the kept groups are the lowest ones.
        if (groups == 1) {
            const std::vector<int32_t> want = {1, 5, 9, 13, 17};
            EXPECT_EQ(std::vector<int32_t>(ids_ref.begin(), ids_ref.begin() + 5), want);
        }
    }
}

// Routed experts in every format, for decode-size and prefill-size batches (t 12: experts with
// two tiles of 4 rows; 16 to 200: the tensor-core path, both kernels); expert 5 is not held by
// this rank (empty weights) and must contribute nothing.
// The grouping of (token, choice) pairs by expert, one-block kernel and three-kernel path alike,
// against the host: offsets are the prefix of the counts, tiles cover each expert's rows in
// tile_rows steps, and every pair's row lies in its expert's range, holds its token, and is
// used once. (Rows within an expert come in the atomics' order on both paths.)
TEST_F(GpuOpsTest, MoeSortBothPathsMatchTheHost) {
    struct Case {
        int64_t tokens, k, experts;
        int32_t tile_rows;
    };
    for (const Case c : {Case{1, 6, 64, 4}, Case{64, 6, 64, 4}, Case{7, 8, 384, 8},
                         Case{700, 6, 64, 64}, Case{2000, 8, 256, 64}}) {
        const int64_t pairs = c.tokens * c.k;
        std::vector<int32_t> ids(static_cast<size_t>(pairs));
        for (int64_t t = 0; t < c.tokens; ++t) {
            std::vector<int32_t> perm(static_cast<size_t>(c.experts));
            std::iota(perm.begin(), perm.end(), 0);
            // Skewed choices, so some experts get many rows and some none.
            std::shuffle(perm.begin(), perm.begin() + std::min<int64_t>(c.experts, 3 * c.k), rng);
            for (int64_t j = 0; j < c.k; ++j) ids[t * c.k + j] = perm[j];
        }
        std::vector<int32_t> want_offsets(static_cast<size_t>(c.experts + 1), 0);
        for (int32_t e : ids) ++want_offsets[e + 1];
        for (int64_t e = 0; e < c.experts; ++e) want_offsets[e + 1] += want_offsets[e];
        std::vector<int32_t> want_tiles;
        for (int64_t e = 0; e < c.experts; ++e)
            for (int32_t r = want_offsets[e]; r < want_offsets[e + 1]; r += c.tile_rows)
                want_tiles.insert(want_tiles.end(), {static_cast<int32_t>(e), r});
        const int64_t max_tiles = cuda::moe_max_tiles(pairs, c.experts, c.tile_rows);
        for (bool fused : {true, false}) {
            SCOPED_TRACE(::testing::Message() << (fused ? "one block" : "three kernels")
                                              << ", pairs " << pairs << ", experts " << c.experts);
            gpu->reset_scratch();
            Tensor d_ids = dev_i32(ids, {pairs});
            Tensor counts = poisoned(DType::I32, {c.experts});
            Tensor offsets = poisoned(DType::I32, {c.experts + 1});
            Tensor sorted_token = poisoned(DType::I32, {pairs});
            Tensor pair_row = poisoned(DType::I32, {pairs});
            Tensor tiles = poisoned(DType::I32, {2 * max_tiles});
            Tensor tile_count = poisoned(DType::I32, {1});
            KernelChoices kc = gpu->choices();
            kc.moe_sort_fused = fused;
            cuda::moe_sort(d_ids.ptr<int32_t>(), pairs, c.k, c.experts, counts.ptr<int32_t>(),
                           offsets.ptr<int32_t>(), sorted_token.ptr<int32_t>(),
                           pair_row.ptr<int32_t>(), c.tile_rows, tiles.ptr<int32_t>(),
                           tile_count.ptr<int32_t>(), kc, nullptr);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            EXPECT_EQ(fetch_i32(offsets), want_offsets);
            const auto n_tiles = fetch_i32(tile_count);
            ASSERT_EQ(n_tiles[0], static_cast<int32_t>(want_tiles.size() / 2));
            auto got_tiles = fetch_i32(tiles);
            got_tiles.resize(want_tiles.size());
            EXPECT_EQ(got_tiles, want_tiles);
            const auto tok = fetch_i32(sorted_token), row = fetch_i32(pair_row);
            std::vector<int> used(static_cast<size_t>(pairs), 0);
            int wrong = 0;
            for (int64_t i = 0; i < pairs; ++i) {
                const int32_t r = row[i], e = ids[i];
                if (r < want_offsets[e] || r >= want_offsets[e + 1] || tok[r] != i / c.k ||
                    used[r]++ != 0)
                    ++wrong;
            }
            EXPECT_EQ(wrong, 0);
        }
    }
}

// Shapes (hidden, inter): 128 x 96 gives the down product a K tail of 32 past grouped_mma v2's
// K step of 64 (and NVFP4 scale rows of 6 bytes, which v2 leaves to v1); 128 x 192 is read by
// v2 in every format.
class GpuExperts
    : public GpuOpsTest,
      public ::testing::WithParamInterface<std::tuple<WeightFormat, int64_t, int64_t>> {};

TEST_P(GpuExperts, MatchCpu) {
    const auto [format, t, inter] = GetParam();
    const int64_t experts = 8, hidden = 128, k = 3;
    std::vector<QuantMatrix> qms;
    std::vector<std::vector<uint16_t>> dense;
    std::vector<MlpWeights> wc(experts), wg(experts);
    for (int64_t e = 0; e < experts; ++e) {
        if (e == 5) continue;
        Weight* c[3] = {&wc[e].gate, &wc[e].up, &wc[e].down};
        Weight* g[3] = {&wg[e].gate, &wg[e].up, &wg[e].down};
        for (int i = 0; i < 3; ++i) {
            const int64_t rows = i == 2 ? hidden : inter, cols = i == 2 ? inter : hidden;
            WeightSource src;
            if (format == WeightFormat::Dense) {
                dense.push_back(randn_bf16(rows * cols, 0.1f));
                src = bf16_source(dense.back(), rows, cols);
            } else {
                qms.push_back(random_quant(format, rows, cols, rng));
                src = qms.back().src;
            }
            *c[i] = cpu.load_weight(src);
            *g[i] = gpu->load_weight(src);
        }
    }
    std::vector<int32_t> ids(t * k);
    std::vector<float> w = randn(t * k);
    for (int64_t i = 0; i < t; ++i) {
        std::vector<int32_t> perm(experts);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t j = 0; j < k; ++j) ids[i * k + j] = perm[j];
    }
    auto x = randn(t * hidden);
    std::vector<float> ref(t * hidden);
    cpu.moe_experts(host(x, {t, hidden}), Tensor(ids.data(), DType::I32, {t, k}), host(w, {t, k}),
                    wc, host(ref, {t, hidden}));
    // Past four rows per expert, or from eight tokens, the tensor cores take the products, with
    // BF16 inputs.
    const bool mma = gpu->choices().moe_tensor_cores(t, t * k / std::min<int64_t>(t * k, experts));
    // The tensor-core kernels: v1 (64-row tiles) and v2 (16-row tiles up to 16 mean rows per
    // expert, 64 past them; v1 where it cannot read the matrices).
    for (int mv : {1, 2}) {
        if (!mma && mv == 1) continue;
        ScopedChoices chosen(*gpu, [mv = mv](KernelChoices& kc) {
            kc.grouped_mma = mv == 1 ? KernelVariant::V1 : KernelVariant::V2;
        });
        for (int v : kSkinnyVariants) {
            SkinnyVariant variant(*gpu, v);
            gpu->reset_scratch();
            Tensor out = poisoned(DType::F32, {t, hidden});
            gpu->moe_experts(dev(x, {t, hidden}), dev_i32(ids, {t, k}), dev(w, {t, k}), wg, out);
            EXPECT_LE(rel_err(fetch(out), ref), mma ? kBf16Tol : kF32Tol)
                << weight_format_name(format) << " t " << t << " inter " << inter << " skinny v"
                << v << " mma v" << mv;
        }
    }
    // moe_experts_add: the combine adds to what `out` holds (the shared experts' output), as
    // moe_experts then add would.
    auto shared = randn(t * hidden);
    std::vector<float> ref_add(t * hidden);
    for (size_t i = 0; i < ref_add.size(); ++i) ref_add[i] = shared[i] + ref[i];
    gpu->reset_scratch();
    Tensor out = dev(shared, {t, hidden});
    gpu->moe_experts_add(dev(x, {t, hidden}), dev_i32(ids, {t, k}), dev(w, {t, k}), wg, out);
    EXPECT_LE(rel_err(fetch(out), ref_add), mma ? kBf16Tol : kF32Tol)
        << weight_format_name(format) << " t " << t << " inter " << inter << " (add)";
}

// t 16: 6 mean rows per expert (v2's 16-row tiles); 45: 16 (the largest 16-row case, tiles
// split at 16); 100: 37 (64-row tiles with idle warps); 200: 75 (two 64-row tiles).
INSTANTIATE_TEST_SUITE_P(
    Formats, GpuExperts,
    ::testing::Combine(::testing::Values(WeightFormat::Dense, WeightFormat::Fp8Block,
                                         WeightFormat::Nvfp4, WeightFormat::Int4Group),
                       ::testing::Values(1, 6, 12, 16, 45, 100, 200), ::testing::Values(96, 192)));

}  // namespace
}  // namespace myriad::testing
