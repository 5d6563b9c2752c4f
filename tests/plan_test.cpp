// myriad plan: GPU specs, weight bytes, reserves, KV capacity and the chosen layout, each figure
// against numbers worked out by hand here from reference.md §1.8/§1.10/§2.2, and against the
// safetensors headers of the golden checkpoints.
#include <gtest/gtest.h>

#include <filesystem>

#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/gguf_config.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "plan/gpu_share.h"
#include "plan/gpu_spec.h"
#include "plan/memory_plan.h"
#include "plan/weight_inventory.h"
#include "run_myriad.h"
#include "util/error.h"

namespace myriad::plan {
namespace {

namespace fs = std::filesystem;

std::string config_dir(std::string_view name) {
    return std::string(MYRIAD_SOURCE_DIR) + "/tests/data/configs/" + std::string(name);
}

std::string bad_input_message(auto&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
}

// Ranks that share a GPU split 90% of it evenly: 8 ranks on a 141 GB card get 15.9 GB each.
TEST(GpuShare, RanksSharingAGpuSplitItsMemoryEvenly) {
    const uint64_t card = 141'000'000'000ull;
    const std::vector<int> eight(8, 0);
    EXPECT_EQ(plan::rank_budget(eight, 0, card), static_cast<int64_t>(0.9 * card / 8));
    EXPECT_EQ(plan::rank_budget({0, 1}, 1, card), static_cast<int64_t>(0.9 * card));
    EXPECT_EQ(plan::rank_budget({0, 0, 1, 1}, 1, card), static_cast<int64_t>(0.9 * card / 2));
    plan::RankNeed need;
    need.weights = 10'000'000'000;
    need.kv_cache = 3'000'000'000;
    need.reserve = 2'000'000'000;  // 15 GB: fits an eighth (15.86 GB)
    EXPECT_EQ(plan::shared_gpu_problem(eight, {card}, need), "");
    need.kv_cache = 4'000'000'000;  // 16 GB: does not
    const std::string why = plan::shared_gpu_problem(eight, {card}, need);
    EXPECT_NE(why.find("8 ranks share GPU 0"), std::string::npos) << why;
    EXPECT_NE(why.find("15.9 GB"), std::string::npos) << why;
    EXPECT_NE(why.find("KV cache 4.0 GB"), std::string::npos) << why;
    EXPECT_NE(why.find("--kv-blocks"), std::string::npos) << why;
    // The same need on four GPUs of two ranks each fits; an unknown card is not checked.
    EXPECT_EQ(plan::shared_gpu_problem({0, 0, 1, 1, 2, 2, 3, 3}, {card, card, card, card}, need),
              "");
    EXPECT_EQ(plan::shared_gpu_problem(eight, {0}, need), "");
    // Only the GPU that is over says so: 20 GB fits GPU 0 alone, not a seventh of GPU 1.
    need.kv_cache = 8'000'000'000;
    const std::string two = plan::shared_gpu_problem({0, 1, 1, 1, 1, 1, 1, 1}, {card, card}, need);
    EXPECT_NE(two.find("7 ranks share GPU 1"), std::string::npos) << two;
    EXPECT_EQ(two.find("GPU 0"), std::string::npos) << two;
}

TEST(GpuSpec, SizesAndPresets) {
    auto g = parse_gpu_spec("8x96GB");
    ASSERT_EQ(g.size(), 8u);
    EXPECT_EQ(g[0].bytes, 96'000'000'000ull);
    g = parse_gpu_spec("4x141GiB");
    ASSERT_EQ(g.size(), 4u);
    EXPECT_EQ(g[3].bytes, 141ull << 30);
    g = parse_gpu_spec("8xH200");
    ASSERT_EQ(g.size(), 8u);
    EXPECT_EQ(g[0].bytes, 143771ull * 1048576);  // nvidia-smi: 143771MiB
    EXPECT_EQ(g[0].name, "H200");
    g = parse_gpu_spec("2xh100, 1xrtx pro 6000,B200");
    ASSERT_EQ(g.size(), 4u);
    EXPECT_EQ(g[1].bytes, 81559ull * 1048576);
    EXPECT_EQ(g[2].bytes, 97887ull * 1048576);
    EXPECT_EQ(g[3].bytes, 183359ull * 1048576);
    EXPECT_EQ(parse_gpu_spec("1.5TB")[0].bytes, 1'500'000'000'000ull);
    EXPECT_EQ(parse_gpu_spec("80000MiB")[0].bytes, 80000ull << 20);
}

TEST(GpuSpec, BadSpecsNameTheFlag) {
    for (const char* bad : {"8x96", "8xfoo", "0x96GB", "", "8x96GB,", "x96GB", "-1GB"}) {
        const std::string msg = bad_input_message([&] { parse_gpu_spec(bad); });
        EXPECT_NE(msg.find("--gpus"), std::string::npos) << bad << ": " << msg;
    }
}

// Kimi-K2.5-NVFP4 by hand: routed experts NVFP4 (codes K/2 bytes per row, an e4m3 scale per 16
// inputs, two F32 scalars per linear), everything else BF16, the router bias F32.
struct KimiBytes {
    static constexpr int64_t H = 7168, V = 163840, L = 61, heads = 64, q_lora = 1536, kv_lora = 512,
                             rope = 64, qk = 192, v = 128, inter = 18432, moe = 2048, E = 384;
    // Per GPU at TP = tp: Rows/Cols tensors divided, the rest whole.
    static int64_t sharded(int64_t tp) {
        int64_t s = 2 * V * H * 2;  // embed_tokens (rows) + lm_head (rows)
        const int64_t attn = (heads * qk * q_lora + heads * (128 + v) * kv_lora + H * heads * v);
        s += L * attn * 2;                                        // q_b, kv_b, o_proj
        s += 3 * inter * H * 2;                                   // layer 0 dense MLP
        const int64_t nvfp4_linear = moe * H / 2 + moe * H / 16;  // codes + block scales
        s += (L - 1) * E * 3 * nvfp4_linear;                      // routed experts
        s += (L - 1) * 3 * moe * H * 2;                           // shared expert (BF16)
        return s / tp;
    }
    static int64_t replicated() {
        int64_t r = H * 2;  // model.norm
        r += L * (2 * H + q_lora * H + q_lora + (kv_lora + rope) * H + kv_lora) * 2;
        r += (L - 1) * (E * H * 2 + E * 4);  // router weight (BF16) and bias (F32)
        r += (L - 1) * E * 3 * 2 * 4;        // weight_scale_2 and input_scale of each expert linear
        r += L * 4;                          // the FP8 KV cache's k_scale of each layer
        return r;
    }
};

TEST(PlanWeights, KimiK25Nvfp4ByHand) {
    const ModelConfig c = load_model_config(config_dir("kimi-k2.5-nvfp4"));
    const WeightInventory w = weights_from_config(c);
    const int64_t total = KimiBytes::sharded(1) + KimiBytes::replicated();
    EXPECT_EQ(w.total_bytes(), total);
    EXPECT_GT(total, 593'000'000'000);  // "about 594 GB"
    EXPECT_LT(total, 596'000'000'000);
    for (int tp : {1, 2, 4, 8}) {
        const GpuWeightBytes g = weight_bytes_per_gpu(w, c, tp, 1);
        EXPECT_EQ(g.sharded, KimiBytes::sharded(tp)) << tp;
        EXPECT_EQ(g.replicated, KimiBytes::replicated()) << tp;
    }
    // TP=8 with expert parallelism: 48 whole experts per GPU, the rest split as in TP=8 (the
    // same bytes up to rounding, as 384 experts divide by 8).
    const GpuWeightBytes ep = weight_bytes_per_gpu(w, c, 8, 8);
    const int64_t experts = 60 * KimiBytes::E * 3 * (2048 * 7168 / 2 + 2048 * 7168 / 16 + 8);
    EXPECT_EQ(ep.replicated, KimiBytes::replicated() - 60 * KimiBytes::E * 3 * 8);
    EXPECT_NEAR(static_cast<double>(ep.total()),
                static_cast<double>(weight_bytes_per_gpu(w, c, 8, 1).total()), 1e6);
    EXPECT_GT(ep.sharded, experts / 8);
    const auto kinds = w.bytes_by_kind();
    EXPECT_EQ(kinds.at("nvfp4"), experts);
}

// The headers of an export with ModelOpt's KV-scale names (self_attn.k_proj.k_scale and
// v_proj.v_scale, as nvidia/Kimi-K2.5-NVFP4 writes them): the K scale is the layer's predicted
// k_scale, the V scale a known F32 scalar; nothing is missing or unexpected.
TEST(PlanWeights, ModelOptKvScaleSpellings) {
    const ModelConfig c = load_model_config(config_dir("kimi-k2.5-nvfp4"));
    const WeightInventory predicted = weights_from_config(c);
    std::vector<TensorInfo> headers;
    for (const WeightEntry& e : predicted.entries) {
        std::string name = "language_model." + e.name;
        if (name.ends_with(".self_attn.k_scale"))
            name.replace(name.size() - 7, 7, "k_proj.k_scale");
        TensorInfo t;
        t.name = name;
        t.end = static_cast<uint64_t>(e.bytes);
        headers.push_back(t);
        if (name.ends_with("k_proj.k_scale")) {
            t.name = name.substr(0, name.size() - 14) + "v_proj.v_scale";
            t.end = 4;
            headers.push_back(t);
        }
    }
    const WeightInventory h = weights_from_headers(c, headers);
    EXPECT_TRUE(h.missing.empty()) << h.missing.front();
    EXPECT_TRUE(h.unexpected.empty()) << h.unexpected.front();
    EXPECT_EQ(h.total_bytes(), predicted.total_bytes() + 4 * c.num_hidden_layers);
    // A stray name that only looks like one is still unexpected.
    TensorInfo stray;
    stray.name = "language_model.model.layers.0.self_attn.q_proj.k_scale";
    stray.end = 4;
    headers.push_back(stray);
    EXPECT_EQ(weights_from_headers(c, headers).unexpected.size(), 1u);
}

TEST(PlanKv, BytesPerTokenAndReserves) {
    const ModelConfig c = load_model_config(config_dir("kimi-k2.5-nvfp4"));
    // reference.md §1.6: 576 values per token per layer, x61 layers = 70,272 bytes in BF16.
    EXPECT_EQ(kv_bytes_per_token(c, DType::BF16), 70272);
    EXPECT_EQ(kv_bytes_per_token(c, DType::F8_E4M3), 35136);
    PlanOptions o;
    // 2 bytes * 8192 tokens * (3*7168 + 64/8*(192+128) + 576 + 2*max(18432, 8*2048)/8)
    // + 4 bytes * 256 sequences * 163840/8 logits
    // + the naive attention's workspace: 8192 context rows of 4 * (512 + 64 + 8 * (128 + 128))
    //   bytes, a BF16 latent copy 2 * 8192 * 512, and 4 * 8192 tokens * 8 heads of log-sum-exp.
    const int64_t naive8 = 4 * 8192 * (512 + 64 + 8 * 256) + 2 * 8192 * 512 + 4 * 8192 * 8;
    const int64_t act8 =
        2 * 8192 * (3 * 7168 + 8 * 320 + 576 + 2 * 18432 / 8) + 4 * 256 * 163840 / 8 + naive8;
    EXPECT_EQ(activation_bytes(c, o, 8, 1), act8);
    EXPECT_EQ(activation_bytes(c, o, 8, 8), act8);  // expert parallelism moves no activations
    // A smaller naive bound (ModelOptions::naive_context_tokens) shrinks only that workspace.
    o.naive_context_tokens = 1024;
    EXPECT_EQ(activation_bytes(c, o, 8, 1),
              act8 - (4 * 7168 * (512 + 64 + 8 * 256) + 2 * 7168 * 512));
}

struct Acceptance {
    Plan plan;
    const LayoutFit& tp(int n) const {
        for (const LayoutFit& l : plan.layouts)
            if (l.tp == n && l.ep == 1) return l;
        throw std::runtime_error("no layout");
    }
};

Acceptance plan_kimi(const std::string& gpus, KvCacheDtype kv = KvCacheDtype::Auto,
                     int64_t context = 0, int64_t concurrency = 1) {
    const ModelConfig c = load_model_config(config_dir("kimi-k2.5-nvfp4"));
    PlanOptions o;
    o.gpus = parse_gpu_spec(gpus);
    o.kv_cache_dtype = kv;
    o.context = context;
    o.concurrency = concurrency;
    return {make_plan(c, weights_from_config(c), o)};
}

TEST(PlanLayouts, KimiK25AcceptanceTp4AndTp8) {
    const Acceptance a96 = plan_kimi("8x96GB"), a141 = plan_kimi("8x141GB"),
                     a192 = plan_kimi("8x192GB");
    EXPECT_FALSE(a96.tp(4).fits);
    EXPECT_FALSE(a141.tp(4).fits);
    EXPECT_TRUE(a192.tp(4).fits) << a192.tp(4).reason;
    for (const Acceptance* a : {&a96, &a141, &a192}) {
        EXPECT_TRUE(a->tp(8).fits) << a->tp(8).reason;
        EXPECT_FALSE(a->tp(1).fits);
        EXPECT_FALSE(a->tp(2).fits);
    }
    // The reason names the layout, what it needs and what the GPUs have.
    const int64_t need4 = KimiBytes::sharded(4) + KimiBytes::replicated() +
                          a96.tp(4).activation_bytes + 2 * (int64_t{1} << 30);
    EXPECT_EQ(a96.tp(4).reason.find(fmt::format("TP=4 needs {:.1f} GB per GPU", need4 / 1e9)), 0u)
        << a96.tp(4).reason;
    EXPECT_NE(a96.tp(4).reason.find("the GPUs have 96.0 GB"), std::string::npos);
    EXPECT_NE(a141.tp(4).reason.find("the GPUs have 141.0 GB"), std::string::npos);
    // Fewest GPUs that fit: TP=4 on 192 GB cards, TP=8 (not EP=8) on the others.
    ASSERT_TRUE(a192.plan.chosen && a96.plan.chosen && a141.plan.chosen);
    EXPECT_EQ(a192.plan.layouts[*a192.plan.chosen].tp, 4);
    EXPECT_EQ(a96.plan.layouts[*a96.plan.chosen].tp, 8);
    EXPECT_EQ(a141.plan.layouts[*a141.plan.chosen].tp, 8);
    EXPECT_EQ(a141.plan.layouts[*a141.plan.chosen].ep, 1);
}

TEST(PlanLayouts, KimiK25KvCapacityBf16AndFp8) {
    for (KvCacheDtype kv : {KvCacheDtype::Bf16, KvCacheDtype::Fp8}) {
        const Acceptance a = plan_kimi("8x96GB", kv, 32768, 4);
        const LayoutFit& l = a.tp(8);
        const int64_t kv_token = 61 * 576 * (kv == KvCacheDtype::Bf16 ? 2 : 1);
        EXPECT_EQ(l.kv_bytes_per_token, kv_token);
        const int64_t free = 96'000'000'000 - KimiBytes::sharded(8) - KimiBytes::replicated() -
                             l.activation_bytes - 2 * (int64_t{1} << 30);
        EXPECT_EQ(l.free_bytes, free);
        const int64_t tokens = free / kv_token / 64 * 64;
        EXPECT_EQ(l.kv_capacity_tokens, tokens);
        EXPECT_EQ(l.max_context, tokens / 4);
        EXPECT_TRUE(l.fits) << l.reason;
    }
    // The checkpoint asks for an FP8 KV cache (kv_cache_scheme / kv_cache_quant_algo): auto = FP8.
    EXPECT_EQ(plan_kimi("8x96GB").plan.kv_dtype, DType::F8_E4M3);
    // A whole 262,144-token sequence in BF16 does not fit in what TP=8 leaves on 96 GB cards.
    const Acceptance bf16 = plan_kimi("8x96GB", KvCacheDtype::Bf16);
    EXPECT_FALSE(bf16.tp(8).fits);
    EXPECT_NE(bf16.tp(8).reason.find("--kv-cache-dtype fp8"), std::string::npos)
        << bf16.tp(8).reason;
}

TEST(PlanLayouts, TooFewGpusAndIndivisibleTp) {
    const Acceptance a = plan_kimi("4xH200");
    EXPECT_FALSE(a.tp(8).fits);
    EXPECT_EQ(a.tp(8).reason, "TP=8 needs 8 GPUs; 4 given");
    EXPECT_FALSE(a.plan.chosen.has_value());  // TP=4 needs ~152 GB, an H200 has 150.8 GB

    // The golden v3 model has 4 heads: TP=8 cannot split them.
    const ModelConfig c =
        load_model_config(std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/v3_grouped_yarn");
    PlanOptions o;
    o.gpus = parse_gpu_spec("8x80GB");
    const Plan p = make_plan(c, weights_from_config(c), o);
    for (const LayoutFit& l : p.layouts) {
        if (l.tp == 8) {
            EXPECT_FALSE(l.fits);
            EXPECT_NE(l.reason.find("num_attention_heads"), std::string::npos) << l.reason;
        }
    }
    ASSERT_TRUE(p.chosen);
    EXPECT_EQ(p.layouts[*p.chosen].gpus, 1);
}

// Every golden checkpoint: the config's prediction equals the sum of its safetensors headers
// (less the vision tower the text model skips), tensor by tensor.
TEST(PlanWeights, GoldenCheckpointsMatchTheirHeaders) {
    int checked = 0;
    for (const char* root : {"/goldens", "/goldens_quant"}) {
        for (const auto& dir : fs::directory_iterator(std::string(MYRIAD_GOLDENS_ROOT) + root)) {
            if (!fs::exists(dir.path() / "config.json")) continue;
            const ModelConfig c = load_model_config(dir.path().string());
            std::vector<TensorInfo> tensors;
            int64_t header_sum = 0, skipped = 0;
            for (const auto& f : fs::directory_iterator(dir.path())) {
                const std::string name = f.path().filename().string();
                if (!name.starts_with("model") || f.path().extension() != ".safetensors") continue;
                SafetensorsFile file(f.path().string());
                for (const TensorInfo& t : file.tensors()) {
                    tensors.push_back(t);
                    const std::string_view n =
                        std::string_view(t.name).starts_with("language_model.")
                            ? std::string_view(t.name).substr(15)
                            : std::string_view(t.name);
                    (is_ignored_tensor(c, n) ? skipped : header_sum) +=
                        static_cast<int64_t>(t.end - t.begin);
                }
            }
            ASSERT_FALSE(tensors.empty()) << dir.path();
            const WeightInventory h = weights_from_headers(c, tensors);
            EXPECT_EQ(h.total_bytes(), header_sum) << dir.path();
            EXPECT_EQ(h.skipped_bytes, skipped) << dir.path();
            EXPECT_TRUE(h.missing.empty()) << dir.path() << ": " << h.missing.front();
            EXPECT_EQ(weights_from_config(c).total_bytes(), header_sum) << dir.path();
            ++checked;
        }
    }
    EXPECT_GE(checked, 10);
}

TEST(PlanCli, JsonShapeAndGpusAuto) {
    const std::string model = config_dir("kimi-k2.5-nvfp4");
    auto r = testing::run_myriad("plan " + model + " --gpus 8x96GB --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j["layouts"].is_array());
    bool saw_tp4 = false;
    for (const auto& l : j["layouts"]) {
        for (const char* k : {"gpus", "tp", "ep", "fits", "weight_bytes_per_gpu",
                              "kv_bytes_per_token", "kv_capacity_tokens"})
            EXPECT_TRUE(l.contains(k)) << k;
        if (l["tp"] == 4 && l["ep"] == 1) {
            saw_tp4 = true;
            EXPECT_FALSE(l["fits"].get<bool>());
            EXPECT_NE(l["reason"].get<std::string>().find("the GPUs have 96.0 GB"),
                      std::string::npos);
            EXPECT_EQ(l["weight_bytes_per_gpu"].get<int64_t>(),
                      KimiBytes::sharded(4) + KimiBytes::replicated());
        }
    }
    EXPECT_TRUE(saw_tp4);
    EXPECT_EQ(j["chosen"]["gpus"], 8);
    EXPECT_EQ(j["chosen"]["tp"], 8);
    EXPECT_EQ(j["chosen"]["kv_bytes_per_token"], 35136);
    // Without NVML, --gpus auto says so and exits 2.
    r = testing::run_myriad("plan " + model +
                            " --gpus auto 2>&1 >/dev/null; MYRIAD_NVML_LIBRARY="
                            "/nonexistent/libnvidia-ml.so.1 " +
                            std::string(MYRIAD_BINARY) + " plan " + model + " --gpus auto");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1 could not be loaded"), std::string::npos)
        << r.err;
    r = testing::run_myriad("plan " + model + " --gpus 8xQ9000");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
}

// The serving sizes given to `myriad plan` reach the activation reserve; bad ones exit 2.
TEST(PlanCli, ServingSizesSetTheActivationReserve) {
    const std::string model = config_dir("kimi-k2.5-nvfp4");
    const ModelConfig c = load_model_config(model);
    auto r = testing::run_myriad("plan " + model +
                                 " --gpus 8x96GB --json --max-num-seqs 64 "
                                 "--max-num-batched-tokens 2048 --naive-context-tokens 1024");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    PlanOptions o;
    o.max_num_seqs = 64;
    o.max_batched_tokens = 2048;
    o.naive_context_tokens = 1024;
    int checked = 0;
    for (const auto& l : j["layouts"]) {
        const int tp = l["tp"].get<int>(), ep = l["ep"].get<int>();
        EXPECT_EQ(l["activation_bytes"].get<int64_t>(), activation_bytes(c, o, tp, ep))
            << "tp " << tp << " ep " << ep;
        EXPECT_LT(l["activation_bytes"].get<int64_t>(), activation_bytes(c, PlanOptions{}, tp, ep));
        ++checked;
    }
    EXPECT_GE(checked, 4);
    for (const char* flag :
         {"--max-num-seqs", "--max-num-batched-tokens", "--naive-context-tokens"}) {
        r = testing::run_myriad("plan " + model + " --gpus 8x96GB " + flag + " 0");
        EXPECT_EQ(r.status, 2) << flag;
        EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    }
}

}  // namespace

// A GGUF model (its splits together): every GGUF tensor the forward pass reads counts once, at
// its stored size; kv_b_proj, rebuilt from attn_k_b and attn_v_b, counts at BF16 size.
TEST(PlanWeights, GgufTensorsCountAtTheirStoredSize) {
    for (const char* file :
         {"/q8_0_split/tiny-Q8_0-00001-of-00003.gguf", "/q4_k_m/tiny-Q4_K_M.gguf"}) {
        const std::string path = std::string(MYRIAD_GGUF_GOLDENS_DIR) + file;
        const auto gguf = GgufModel::open(path);
        const ModelConfig c = gguf_model_config(*gguf);
        const plan::WeightInventory inv = plan::weights_from_gguf(c, *gguf);
        int64_t stored = 0, gguf_entries = 0, kv_b = 0;
        for (const GgufTensorInfo* t : gguf->tensors()) {
            const bool kv_b_part = t->name.find(".attn_k_b.") != std::string::npos ||
                                   t->name.find(".attn_v_b.") != std::string::npos ||
                                   t->name.find(".attn_kv_b.") != std::string::npos;
            if (!kv_b_part) stored += static_cast<int64_t>(t->nbytes);
        }
        for (const auto& e : inv.entries) {
            if (e.kind.starts_with("gguf ")) gguf_entries += e.bytes;
            if (e.name.ends_with("kv_b_proj.weight")) kv_b += e.bytes;
        }
        EXPECT_EQ(gguf_entries, stored) << path;
        EXPECT_EQ(kv_b, c.num_hidden_layers * c.num_attention_heads *
                            (c.qk_nope_head_dim + c.v_head_dim) * c.kv_lora_rank * 2)
            << path;
        EXPECT_TRUE(inv.missing.empty()) << path;
        auto r = testing::run_myriad("plan " + path + " --gpus 1x80GB --json");
        ASSERT_EQ(r.status, 0) << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["chosen"]["gpus"], 1);
    }
}
}  // namespace myriad::plan
