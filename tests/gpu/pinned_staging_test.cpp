// Loading through the shard reader and the pinned staging buffers (ops/cuda/pinned_staging.h)
// gives the GPU the same weights, bit for bit, as the plain path (pageable copies straight from
// the mapping, MYRIAD_PINNED_STAGING=0), for golden checkpoints in BF16, NVFP4 and FP8 blocks at
// TP 1 and as both ranks of TP 2 on one GPU; BF16 matrices also equal the checkpoint's own bytes.
// The plain weights stay alive while the staged ones load, and the memory the staged ones will
// take is poisoned first, so a copy that never happened cannot pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "format/checkpoint.h"
#include "gpu_test_util.h"
#include "model/model_config.h"
#include "model/shard_load.h"
#include "model/weights.h"
#include "ops/cuda/cuda_check.h"

namespace myriad {
namespace {

using cuda::check_cuda;

std::vector<const Weight*> all_weights(const ModelWeights& m) {
    std::vector<const Weight*> out = {&m.embed, &m.final_norm, &m.lm_head};
    auto mlp = [&](const MlpWeights& w) { out.insert(out.end(), {&w.gate, &w.up, &w.down}); };
    for (const LayerWeights& l : m.layers) {
        const AttentionWeights& a = l.attn;
        out.insert(out.end(),
                   {&l.input_norm, &l.post_attention_norm, &a.q_a, &a.q_a_norm, &a.q_b, &a.q,
                    &a.kv_a, &a.kv_a_norm, &a.kv_b, &a.o, &l.router, &l.router_bias});
        mlp(l.dense);
        mlp(l.shared);
        for (const MlpWeights& e : l.experts) mlp(e);
    }
    return out;
}

std::vector<uint8_t> fetch(const void* dev, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    if (bytes) check_cuda(cudaMemcpy(out.data(), dev, bytes, cudaMemcpyDeviceToHost), "fetch");
    return out;
}

// The device bytes of a weight: dense data, or the shard's codes and the scale rows it holds.
std::vector<uint8_t> device_bytes(const Weight& w) {
    if (w.format == WeightFormat::Dense) return fetch(w.data.data, w.data.nbytes());
    const QuantizedData& q = w.quant;
    std::vector<uint8_t> out = fetch(q.codes, static_cast<size_t>(q.code_row_bytes * w.rows));
    const int64_t srows = w.rows ? (q.row_offset + w.rows - 1) / q.block_rows + 1 : 0;
    const size_t es = q.scale_dtype == DType::F8_E4M3 ? 1 : 4;
    const std::vector<uint8_t> s =
        fetch(q.scales, static_cast<size_t>(srows * q.scale_row_stride) * es);
    out.insert(out.end(), s.begin(), s.end());
    return out;
}

// Fills much of the GPU's free memory with 0xff and frees it: the next allocations land on it.
void poison_free_memory() {
    size_t free = 0, total = 0;
    check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    const size_t bytes = std::min<size_t>(free / 2, size_t{4} << 30);
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "poison");
    check_cuda(cudaMemset(p, 0xff, bytes), "poison");
    check_cuda(cudaDeviceSynchronize(), "poison");
    check_cuda(cudaFree(p), "poison");
}

struct Loaded {
    std::vector<std::unique_ptr<Ops>> ops;
    std::vector<ModelWeights> weights;
};

Loaded load(const ModelConfig& c, const Checkpoint& ckpt, int tp, bool staged) {
    if (staged)
        unsetenv("MYRIAD_PINNED_STAGING");
    else
        setenv("MYRIAD_PINNED_STAGING", "0", 1);
    Loaded out;
    out.ops.resize(static_cast<size_t>(tp));
    out.weights.resize(static_cast<size_t>(tp));
    std::vector<Layout> layouts;
    for (int r = 0; r < tp; ++r) layouts.emplace_back(tp, false, r);
    std::unique_ptr<ShardLoad> sl;
    if (staged) {
        ShardReaderOptions o;
        o.threads = 4;
        o.chunk_bytes = 256 << 10;
        sl = std::make_unique<ShardLoad>(c, ckpt, layouts, o);
        sl->reader().start();
    }
    std::vector<std::thread> ranks;
    std::vector<std::string> errors(static_cast<size_t>(tp));
    for (int r = 0; r < tp; ++r)
        ranks.emplace_back([&, r] {
            try {
                out.ops[r] = std::make_unique<cuda::CudaOps>(0, testing::test_kernel_choices());
                out.weights[r] = load_weights(c, ckpt, *out.ops[r], layouts[r],
                                              staged ? WeightFeed{sl.get(), r} : WeightFeed{});
                check_cuda(cudaDeviceSynchronize(), "load");
            } catch (const std::exception& e) {
                errors[r] = e.what();
            }
        });
    for (auto& t : ranks) t.join();
    for (const std::string& e : errors) EXPECT_EQ(e, "");
    if (sl) {
        const ShardReadStats st = sl->reader().stats();
        EXPECT_EQ(st.bytes_read, st.bytes_planned);
        EXPECT_EQ(st.drops, st.reads);  // the GPU copies everything: every page dropped
    }
    unsetenv("MYRIAD_PINNED_STAGING");
    return out;
}

void check(const std::string& dir, int tp) {
    SCOPED_TRACE(dir + " tp " + std::to_string(tp));
    const ModelConfig c = load_model_config(dir);
    const Checkpoint ckpt = Checkpoint::open(dir);
    validate_checkpoint(c, ckpt, Layout(tp, false));
    const Loaded plain = load(c, ckpt, tp, false);
    poison_free_memory();
    const Loaded staged = load(c, ckpt, tp, true);
    int64_t bf16_checked = 0;
    for (int r = 0; r < tp; ++r) {
        const auto a = all_weights(plain.weights[r]), b = all_weights(staged.weights[r]);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(a[i]->format, b[i]->format) << "weight " << i;
            ASSERT_EQ(a[i]->rows, b[i]->rows) << "weight " << i;
            ASSERT_EQ(a[i]->cols, b[i]->cols) << "weight " << i;
            if (a[i]->rows == 0) continue;
            EXPECT_NE(a[i]->format == WeightFormat::Dense ? a[i]->data.data : a[i]->quant.codes,
                      b[i]->format == WeightFormat::Dense ? b[i]->data.data : b[i]->quant.codes);
            EXPECT_TRUE(device_bytes(*a[i]) == device_bytes(*b[i]))
                << "rank " << r << " weight " << i << " differs from the plain path";
        }
        // The embedding's rows of a BF16 checkpoint: the checkpoint's own bytes.
        const TensorView e = ckpt.get("model.embed_tokens.weight");
        if (e.dtype() == DType::BF16) {
            const Weight& w = staged.weights[r].embed;
            const size_t row = static_cast<size_t>(w.cols) * 2;
            const std::vector<uint8_t> got = device_bytes(w);
            ASSERT_EQ(got.size(), row * static_cast<size_t>(w.rows));
            EXPECT_EQ(
                std::memcmp(got.data(), e.data + staged.weights[r].vocab_begin * row, got.size()),
                0);
            ++bf16_checked;
        }
    }
    if (dir.find("bf16") != std::string::npos) {
        EXPECT_EQ(bf16_checked, tp);
    }
}

TEST(PinnedStaging, LoadsGoldensBitForBitAsThePlainPath) {
    const std::string g = std::string(MYRIAD_GOLDENS_ROOT);
    for (const char* d :
         {"/goldens/tp8_bf16", "/goldens_quant/tp8_nvfp4", "/goldens_quant/tp8_fp8_block"})
        for (int tp : {1, 2}) check(g + d, tp);
}

}  // namespace
}  // namespace myriad
