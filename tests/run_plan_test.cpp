// The run plan: every figure against the planner's published parts (weights per rank, the
// activation reserve, KV bytes per token), on the golden checkpoints with the CPU and with GPUs
// described here (no GPU needed); and every impossible combination refused with a nearest
// configuration that, applied, plans.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/engine_setup.h"
#include "cli/model_source.h"
#include "golden_reference.h"
#include "model/layout_check.h"
#include "plan/memory_plan.h"
#include "plan/run_plan.h"
#include "run_myriad.h"
#include "util/error.h"

namespace myriad::plan {
namespace {

std::string golden(const std::string& name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/" + name;
}

std::string refusal(const RunFlags& f, const ModelHeaders& m, const MachineGpus& gpus) {
    try {
        make_run_plan(f, m, gpus);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "planned";
    return "";
}

// GPUs of `bytes` each, sm_90, with a binary built for sm_90a.
MachineGpus h100s(int n, uint64_t bytes) {
    MachineGpus m;
    for (int i = 0; i < n; ++i) {
        GpuInfo g;
        g.name = "test GPU";
        g.cc = 90;
        g.index = i;
        g.memory = bytes;
        m.gpus.push_back(g);
    }
    m.built_archs = {"90a"};
    m.source = "test";
    return m;
}

MachineGpus no_gpus() {
    MachineGpus m;
    m.why_none = "no CUDA device (test)";
    return m;
}

// The number after `flag` in `text` (-1 when absent).
double number_after(const std::string& text, const std::string& flag) {
    const size_t at = text.find(flag + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + flag.size() + 1));
}

struct Model {
    cli::ModelSource source;
    ModelHeaders h;
    explicit Model(const std::string& dir) : source(cli::open_model_source(dir)) {
        h = source.headers();
    }
    const ModelConfig& c() const { return source.config; }
};

int64_t weights_per_rank(const Model& m, int tp, int ep) {
    return weight_bytes_per_gpu(m.source.weights, m.c(), tp, ep).total();
}

int64_t activations(const Model& m, const RunFlags& f) {
    PlanOptions o;
    o.max_batched_tokens = f.max_num_batched_tokens;
    o.max_num_seqs = f.max_num_seqs;
    o.naive_context_tokens = f.naive_context_tokens;
    return activation_bytes(m.c(), o, f.tp, f.expert_parallel ? f.tp : 1);
}

// On the CPU: the model's own context, an exact F32 cache of --kv-cache-memory split over the
// ranks, no GPU reserves; the all-reduce is the threads'.
TEST(RunPlan, CpuTakesKvCacheMemoryAndTheModelsContext) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.device = "cpu";
    RunPlan p = make_run_plan(f, m.h, no_gpus());
    EXPECT_EQ(p.device, Device::Cpu);
    EXPECT_EQ(p.max_model_len, m.c().max_position_embeddings);
    EXPECT_EQ(p.kv_dtype, DType::F32);
    EXPECT_EQ(p.kv_bytes_per_token, kv_bytes_per_token(m.c(), DType::F32));
    EXPECT_EQ(p.kv_blocks, kDefaultKvCacheMemory / (16 * p.kv_bytes_per_token));
    EXPECT_EQ(p.weight_bytes, weights_per_rank(m, 1, 1));
    EXPECT_EQ(p.activation_bytes, activations(m, f));
    EXPECT_EQ(p.workspace_bytes + p.cuda_graph_bytes, 0);
    EXPECT_EQ(p.all_reduce.algorithm, "none (one rank)");

    f.tp = 2;
    f.kv_cache_memory = int64_t{256} << 20;
    f.max_model_len = 1000;
    p = make_run_plan(f, m.h, no_gpus());
    EXPECT_EQ(p.kv_blocks, (int64_t{128} << 20) / (16 * p.kv_bytes_per_token));
    EXPECT_EQ(p.max_model_len, 1000);
    EXPECT_EQ(p.max_model_len_reason, "--max-model-len");
    EXPECT_EQ(p.weight_bytes, weights_per_rank(m, 2, 1));
    EXPECT_NE(p.all_reduce.algorithm.find("CPU threads"), std::string::npos);
    // The JSON holds every figure.
    const auto j = run_plan_json(p);
    EXPECT_EQ(j["kv_blocks"], p.kv_blocks);
    EXPECT_EQ(j["max_model_len"], 1000);
    EXPECT_EQ(j["per_rank"]["weight_bytes"], p.weight_bytes);
    EXPECT_EQ(j["layout"], "TP=2");
}

// --speculative mtp: the MTP layer's tensors (not its copies of the embedding and the head) are in
// the rank's weights, each tensor of the checkpoint's headers counted, and its latent cache in
// every token's bytes; a model without MTP layers is refused naming the config field.
TEST(RunPlan, MtpLayersAreCounted) {
    const Model m(myriad::testing::mtp_golden_dir());
    cli::EngineFlags with, without;
    with.speculative = "mtp";
    cli::RunHeaders keep_with, keep_without;
    const ModelHeaders hw = cli::run_headers(m.source, with, keep_with);
    const ModelHeaders ho = cli::run_headers(m.source, without, keep_without);
    const RunPlan p = make_run_plan(cli::run_flags(with), hw, h100s(1, 80'000'000'000ull));
    const RunPlan q = make_run_plan(cli::run_flags(without), ho, h100s(1, 80'000'000'000ull));
    const int64_t layers = m.c().num_hidden_layers;
    ASSERT_GE(m.c().num_nextn_predict_layers, 1);
    const std::string prefix = fmt::format("model.layers.{}.", layers);
    std::vector<std::string> in_file;
    for (const auto& f : m.source.checkpoint->files())
        for (const TensorInfo& t : f->tensors())
            if (t.name.starts_with(prefix) && t.name.find(".embed_tokens.") == std::string::npos &&
                t.name.find(".shared_head.head.") == std::string::npos)
                in_file.push_back(t.name);
    int64_t mtp_bytes = 0;
    size_t counted = 0;
    for (const WeightEntry& e : keep_with.weights.entries)
        if (e.name.starts_with(prefix)) {
            mtp_bytes += e.bytes;
            ++counted;
            EXPECT_NE(std::find(in_file.begin(), in_file.end(), e.name), in_file.end()) << e.name;
        }
    EXPECT_EQ(counted, in_file.size());
    ASSERT_GT(mtp_bytes, 0);
    EXPECT_EQ(p.weight_bytes - q.weight_bytes, mtp_bytes);  // one rank holds all of it
    EXPECT_EQ(p.kv_bytes_per_token * layers, q.kv_bytes_per_token * (layers + 1));
    EXPECT_LT(p.kv_blocks, q.kv_blocks);  // the same budget holds fewer tokens
    for (const WeightEntry& e : keep_without.weights.entries)
        EXPECT_FALSE(e.name.starts_with(prefix)) << e.name << " counted without --speculative mtp";

    const Model plain(golden("goldens/kimi_k2"));
    cli::RunHeaders keep;
    try {
        cli::run_headers(plain.source, with, keep);
        ADD_FAILURE() << "planned MTP layers of a model without any";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("num_nextn_predict_layers"), std::string::npos)
            << e.what();
    }
}

// On a GPU: 90% of the card, less weights and reserves, in blocks; ranks sharing a card split
// its budget; BF16 cache by default; the kernels are named.
TEST(RunPlan, GpuKvCacheIsWhatUtilizationLeaves) {
    const Model m(golden("goldens/kimi_k2"));
    const uint64_t card = 80'000'000'000ull;
    RunFlags f;
    RunPlan p = make_run_plan(f, m.h, h100s(1, card));
    ASSERT_EQ(p.device, Device::Cuda);
    EXPECT_EQ(p.devices, std::vector<int>{0});
    EXPECT_EQ(p.kv_dtype, DType::BF16);
    EXPECT_FALSE(p.kernels.empty());
    const int64_t budget = static_cast<int64_t>(0.9 * static_cast<double>(card));
    EXPECT_EQ(p.budget_bytes, budget);
    const int64_t reserves = activations(m, f) + kGpuWorkspaceBytes + kCudaGraphBytes;
    EXPECT_EQ(p.reserve_bytes(), reserves);
    const int64_t block = 16 * kv_bytes_per_token(m.c(), DType::BF16);
    EXPECT_EQ(p.kv_blocks, (budget - weights_per_rank(m, 1, 1) - reserves) / block);
    EXPECT_EQ(p.all_reduce.two_shot_from, -1);

    f.tp = 2;
    f.devices = "0,0";
    f.gpu_memory_utilization = 0.5;
    p = make_run_plan(f, m.h, h100s(1, card));
    EXPECT_EQ(p.ranks_per_gpu, 2);
    EXPECT_EQ(p.budget_bytes, static_cast<int64_t>(0.5 * static_cast<double>(card) / 2));
    EXPECT_EQ(p.kv_blocks,
              (p.budget_bytes - weights_per_rank(m, 2, 1) - p.reserve_bytes()) / block);
    EXPECT_EQ(p.all_reduce.two_shot_from, kDefaultTwoShotFrom);
    // The smallest card decides.
    MachineGpus mixed = h100s(2, card);
    mixed.gpus[1].memory = card / 2;
    f.devices = "0,1";
    p = make_run_plan(f, m.h, mixed);
    EXPECT_EQ(p.budget_bytes, static_cast<int64_t>(0.5 * static_cast<double>(card / 2)));
    EXPECT_EQ(p.gpu_bytes, static_cast<int64_t>(card / 2));
}

// A checkpoint that declares an FP8 KV cache gets one by default, saying why.
TEST(RunPlan, KvDtypeFollowsTheCheckpointAndTheFlag) {
    const Model m(golden("goldens_quant/nvfp4_all_linear"));
    RunFlags f;
    f.device = "cpu";
    f.kv_cache_memory = int64_t{64} << 20;
    f.max_model_len = 256;
    RunPlan p = make_run_plan(f, m.h, no_gpus());
    if (m.c().quant.kv_cache_fp8) {
        EXPECT_EQ(p.kv_dtype, DType::F8_E4M3);
        EXPECT_NE(p.kv_reason.find("auto"), std::string::npos) << p.kv_reason;
    }
    f.kv_cache_dtype = "bf16";
    p = make_run_plan(f, m.h, no_gpus());
    EXPECT_EQ(p.kv_dtype, DType::BF16);
    EXPECT_EQ(p.kv_reason, "--kv-cache-dtype bf16");
    f.kv_cache_dtype = "int3";
    EXPECT_NE(refusal(f, m.h, no_gpus()).find("--kv-cache-dtype"), std::string::npos);
}

// --max-model-len above the model's positions: refused, the model's own offered.
TEST(RunPlan, MaxModelLenAboveTheModelsIsRefused) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.device = "cpu";
    f.max_model_len = m.c().max_position_embeddings + 1;
    const std::string why = refusal(f, m.h, no_gpus());
    EXPECT_EQ(number_after(why, "--max-model-len"), f.max_model_len) << why;
    EXPECT_NE(why.find("Nearest that works: --max-model-len " +
                       std::to_string(m.c().max_position_embeddings)),
              std::string::npos)
        << why;
}

// A context the cache cannot hold: refused with the largest that fits, which then plans.
TEST(RunPlan, ContextThatDoesNotFitOffersTheLargestThatDoes) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.device = "cpu";
    f.kv_cache_memory = int64_t{1} << 20;  // 1 MiB of cache
    std::string why = refusal(f, m.h, no_gpus());
    ASSERT_NE(why.find("Nearest that works: --max-model-len"), std::string::npos) << why;
    const size_t at = why.find("Nearest that works: ");
    f.max_model_len = static_cast<int64_t>(number_after(why.substr(at), "--max-model-len"));
    ASSERT_GT(f.max_model_len, 0);
    const RunPlan p = make_run_plan(f, m.h, no_gpus());
    EXPECT_EQ(p.max_model_len, p.kv_tokens());  // the largest: exactly the cache
    // The same on a GPU whose budget holds the reserves and a little cache.
    RunFlags g;
    const int64_t block = 16 * kv_bytes_per_token(m.c(), DType::BF16);
    const int64_t need = weights_per_rank(m, 1, 1) + activations(m, g) + kGpuWorkspaceBytes +
                         kCudaGraphBytes + 100 * block;
    const auto card = static_cast<uint64_t>(static_cast<double>(need) / 0.9) + 1;
    why = refusal(g, m.h, h100s(1, card));
    const size_t gat = why.find("Nearest that works: ");
    ASSERT_NE(gat, std::string::npos) << why;
    g.max_model_len = static_cast<int64_t>(number_after(why.substr(gat), "--max-model-len"));
    ASSERT_GT(g.max_model_len, 0) << why;
    const RunPlan q = make_run_plan(g, m.h, h100s(1, card));
    EXPECT_GE(q.kv_tokens(), g.max_model_len);
}

// Weights and reserves larger than the budget: the utilisation that fits, which then plans.
TEST(RunPlan, NotEnoughMemoryOffersTheUtilizationOrGpusThatFit) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.max_model_len = 1024;
    const int64_t need = weights_per_rank(m, 1, 1) + activations(m, f) + kGpuWorkspaceBytes +
                         kCudaGraphBytes + 1024 * kv_bytes_per_token(m.c(), DType::BF16);
    const auto card = static_cast<uint64_t>(static_cast<double>(need) / 0.95);
    const std::string why = refusal(f, m.h, h100s(1, card));
    const double util = number_after(why, "--gpu-memory-utilization");
    ASSERT_GT(util, 0.9) << why;
    EXPECT_LE(util, 0.98) << why;
    f.gpu_memory_utilization = util;
    EXPECT_NO_THROW(make_run_plan(f, m.h, h100s(1, card)));
    // Eight ranks on that one card: fewer ranks per card is the way out.
    f.gpu_memory_utilization = 0.9;
    f.tp = 2;
    f.devices = "0,0";
    const std::string shared = refusal(f, m.h, h100s(1, card));
    EXPECT_NE(shared.find("fewer ranks on GPU 0"), std::string::npos) << shared;
}

// A TP size the model's shapes cut (heads, NVFP4 groups): refused before loading, naming the
// sizes that work; each of those plans.
TEST(RunPlan, TpThatCutsTheModelNamesTheSizesThatWork) {
    for (const char* name :
         {"goldens/kimi_k2", "goldens_quant/nvfp4_all_linear", "goldens_quant/int4_kimi"}) {
        const Model m(golden(name));
        const std::vector<int> ok = working_tp_sizes(m.c(), false);
        RunFlags f;
        f.device = "cpu";
        f.kv_cache_memory = int64_t{64} << 20;
        f.max_model_len = 256;
        for (int tp : {2, 4, 8, 16}) {
            f.tp = tp;
            if (std::find(ok.begin(), ok.end(), tp) != ok.end()) {
                EXPECT_NO_THROW(make_run_plan(f, m.h, no_gpus())) << name << " tp " << tp;
                continue;
            }
            const std::string why = refusal(f, m.h, no_gpus());
            EXPECT_NE(why.find("--tp"), std::string::npos) << why;
            for (int good : ok) {
                if (good > 1) {
                    EXPECT_NE(why.find(std::to_string(good)), std::string::npos)
                        << name << ": " << why;
                }
            }
        }
    }
}

// --device cuda without a GPU, more ranks than GPUs, a --devices entry that is not there.
TEST(RunPlan, DevicesThatAreNotThereAreRefused) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.device = "cuda";
    EXPECT_NE(refusal(f, m.h, no_gpus()).find("--device cuda"), std::string::npos);
    f.tp = 2;
    const std::string two = refusal(f, m.h, h100s(1, 80'000'000'000ull));
    EXPECT_NE(two.find("--devices 0,0"), std::string::npos) << two;
    f.devices = "0,3";
    EXPECT_NE(refusal(f, m.h, h100s(2, 80'000'000'000ull)).find("GPU 3"), std::string::npos);
    // auto falls back to the CPU, saying why.
    f.device = "auto";
    f.devices.clear();
    f.max_model_len = 256;
    const RunPlan p = make_run_plan(f, m.h, h100s(1, 80'000'000'000ull));
    EXPECT_EQ(p.device, Device::Cpu);
    EXPECT_NE(p.device_reason.find("--devices"), std::string::npos) << p.device_reason;
    // A card this build has no kernels for: cuda stops, auto takes the CPU.
    MachineGpus old = h100s(1, 80'000'000'000ull);
    old.gpus[0].cc = 75;
    f.tp = 1;
    EXPECT_EQ(make_run_plan(f, m.h, old).device, Device::Cpu);
    f.device = "cuda";
    EXPECT_NE(refusal(f, m.h, old).find("sm_80"), std::string::npos);
}

// --kv-blocks: exactly that, unless it cannot hold one sequence (then the count that can).
TEST(RunPlan, KvBlocksFlag) {
    const Model m(golden("goldens/kimi_k2"));
    RunFlags f;
    f.device = "cpu";
    f.max_model_len = 1000;
    f.kv_blocks = 100;
    EXPECT_EQ(make_run_plan(f, m.h, no_gpus()).kv_blocks, 100);
    f.kv_blocks = 10;
    const std::string why = refusal(f, m.h, no_gpus());
    EXPECT_NE(why.find("--kv-blocks 63"), std::string::npos) << why;
}

// The measured-memory check: quiet within 5%, a warning naming the gap beyond.
TEST(RunPlan, MemoryCheckNamesTheDifference) {
    RunPlan p;
    p.device = Device::Cuda;
    p.devices = {0, 0};
    p.weight_bytes = 10'000'000'000;
    p.kv_blocks = 1000;
    p.kv_bytes_per_token = 1000;
    const int64_t planned = 2 * p.planned_rank_bytes();
    EXPECT_EQ(memory_check(p, planned), "");
    EXPECT_EQ(memory_check(p, planned * 104 / 100), "");
    const std::string over = memory_check(p, planned * 110 / 100);
    EXPECT_NE(over.find("more"), std::string::npos) << over;
    EXPECT_NE(over.find("+10.0%"), std::string::npos) << over;
    EXPECT_NE(memory_check(p, planned * 80 / 100).find("less"), std::string::npos);
}

// serve stops in the plan, exit 2, before the listener or any weight: the message is the
// plan's, nearest configuration included.
TEST(RunPlanCli, ServeStopsInThePlan) {
    const std::string model = golden("goldens/kimi_k2");
    auto r =
        testing::run_myriad("serve " + model + " --device cpu --port 0 --max-model-len 999999");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("Nearest that works: --max-model-len"), std::string::npos) << r.err;
    r = testing::run_myriad("serve " + model + " --device cpu --port 0 --tp 16");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--tp"), std::string::npos) << r.err;
    r = testing::run_myriad("generate " + model +
                            " --device cpu --prompt-ids 1,2 --kv-cache-memory 1MiB");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("Nearest that works: --max-model-len"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace myriad::plan
