// One rank of a tensor-parallel layout run alone (WorkerGroupOptions::only_rank; bench-model
// --rank): it builds that rank's shard only, issues every collective the full group would (a
// modelled wait each), and bench-model projects its step at other latencies.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "engine/sequence_logits.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "run_myriad.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

const std::string kGolden = std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/tp8_bf16";

WorkerGroupOptions options(int tp, int only_rank, double wait_us) {
    WorkerGroupOptions wo;
    wo.tp = tp;
    wo.threads = 1;
    wo.kv_blocks = 16;
    wo.only_rank = only_rank;
    wo.modelled_collective_us = wait_us;
    return wo;
}

TEST(ModelledRank, HoldsOneShardAndIssuesTheGroupsCollectives) {
    const ModelConfig c = load_model_config(kGolden);
    const Checkpoint ckpt = Checkpoint::open(kGolden);
    WorkerGroup full(c, ckpt, options(8, -1, 0));
    WorkerGroup one(c, ckpt, options(8, 5, 0));
    WorkerGroup whole(c, ckpt, options(1, -1, 0));
    EXPECT_EQ(one.weight_bytes_per_rank(), full.weight_bytes_per_rank());
    EXPECT_LT(one.weight_bytes_per_rank() * 4, whole.weight_bytes_per_rank());
    EXPECT_EQ(full.modelled_all_reduces(), 0);  // a real group models nothing

    const std::vector<TokenId> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
    sequence_logits(one, prompt);                          // one prefill step
    const int64_t per_step = 1 + 2 * c.num_hidden_layers;  // the embedding's, then two a layer
    EXPECT_EQ(one.modelled_all_reduces(), per_step);
    EXPECT_EQ(one.modelled_gathers(), 1);  // the vocabulary slices of the logits
    const std::vector<float> logits = sequence_logits(one, {7}, prompt.size(), 1);
    EXPECT_EQ(logits.size(), static_cast<size_t>(c.vocab_size));
    EXPECT_EQ(one.modelled_all_reduces(), 2 * per_step);
    EXPECT_EQ(one.modelled_gathers(), 2);
}

TEST(ModelledRank, EachCollectiveWaitsItsLatency) {
    const ModelConfig c = load_model_config(kGolden);
    const Checkpoint ckpt = Checkpoint::open(kGolden);
    const double wait_us = 3000;
    WorkerGroup one(c, ckpt, options(8, 2, wait_us));
    const auto t = std::chrono::steady_clock::now();
    sequence_logits(one, {1, 2, 3});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const int64_t collectives = one.modelled_all_reduces() + one.modelled_gathers();
    EXPECT_GE(s, double(collectives) * wait_us * 1e-6);  // a lower bound: never flaky when slow
}

TEST(ModelledRank, RefusesARankOutsideTheLayout) {
    const ModelConfig c = load_model_config(kGolden);
    const Checkpoint ckpt = Checkpoint::open(kGolden);
    EXPECT_THROW(WorkerGroup(c, ckpt, options(1, 0, 0)), Error);
    EXPECT_THROW(WorkerGroup(c, ckpt, options(8, 8, 0)), Error);
    EXPECT_THROW(WorkerGroup(c, ckpt, options(8, 1, -1)), Error);
}

TEST(ModelledRank, BenchModelProjectsTheStep) {
    const std::string args = "--quiet bench-model " + kGolden +
                             " --tp 8 --rank 3 --collective-us 50 --batch 1,2 --prompt-len 8 "
                             "--decode-steps 2 --threads 1 --device cpu";
    Result r = run_myriad(args + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const ModelConfig c = load_model_config(kGolden);
    EXPECT_EQ(j["rank"], 3);
    EXPECT_EQ(j["all_reduces_per_step"], 1 + 2 * c.num_hidden_layers);
    EXPECT_EQ(j["gathers_per_step"], 1);
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& row : j["results"]) {
        const auto& p = row["projected_tok_s_at_collective_us"];
        // Slower collectives, a slower step; at 50 us (the modelled wait) the measured rate.
        EXPECT_GT(p["0"].get<double>(), p["8"].get<double>());
        EXPECT_GT(p["8"].get<double>(), p["12"].get<double>());
        EXPECT_GT(p["12"].get<double>(), p["18"].get<double>());
        EXPECT_GT(p["18"].get<double>(), row["decode_tok_s"].get<double>());
    }
    Result table = run_myriad(args);
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("single-stream projection for 8 ranks"), std::string::npos)
        << table.out;

    Result alone = run_myriad("--quiet bench-model " + kGolden + " --collective-us 5");
    EXPECT_EQ(alone.status, 2);
    EXPECT_NE(alone.err.find("--rank"), std::string::npos) << alone.err;
    Result outside = run_myriad("--quiet bench-model " + kGolden + " --tp 8 --rank 8");
    EXPECT_EQ(outside.status, 2);
    EXPECT_NE(outside.err.find("--rank 8"), std::string::npos) << outside.err;
}

}  // namespace
}  // namespace myriad::testing
