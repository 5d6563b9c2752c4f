// One rank of TP 8 alone on the GPU (bench-model --rank): its collectives are spin kernels on
// its stream, recorded into the decode graphs like the real ones, so a replayed step still waits
// every modelled latency; the rank holds one eighth of the layers' shards.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/sequence_logits.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "ops/backend.h"

namespace myriad::testing {
namespace {

TEST(GpuModelledRank, ReplayedStepsWaitEveryModelledCollective) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    const std::string dir = std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/tp8_bf16";
    const ModelConfig c = load_model_config(dir);
    const Checkpoint ckpt = Checkpoint::open(dir);
    const double wait_us = 2000;
    WorkerGroupOptions wo;
    wo.tp = 8;
    wo.only_rank = 5;
    wo.modelled_collective_us = wait_us;
    wo.device = Device::Cuda;
    wo.devices = {0};
    wo.kv_blocks = 16;
    WorkerGroup one(c, ckpt, wo);
    const std::vector<TokenId> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
    sequence_logits(one, prompt);
    const int64_t per_step = one.modelled_all_reduces() + one.modelled_gathers();
    EXPECT_EQ(one.modelled_all_reduces(), 1 + 2 * c.num_hidden_layers);
    EXPECT_EQ(one.modelled_gathers(), 1);
    // Decode token by token: the first step op by op, the second captured, the rest replayed
    // (which issue no collective from the host: the count stops, the waits do not).
    std::vector<TokenId> feed = {7, 7, 7, 7, 7, 7};
    const auto t = std::chrono::steady_clock::now();
    sequence_logits(one, feed, static_cast<int64_t>(prompt.size()), 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    EXPECT_GE(s, double(feed.size() * per_step) * wait_us * 1e-6);
    std::printf("6 decode steps of %lld modelled collectives at %.0f us: %.1f ms (>= %.1f ms)\n",
                (long long)per_step, wait_us, s * 1e3,
                double(feed.size() * per_step) * wait_us * 1e-3);
}

}  // namespace
}  // namespace myriad::testing
