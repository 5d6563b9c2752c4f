// The run plan on a real GPU: the budget is 90% of the card (split over the ranks that share
// it), the kernels are named, and `myriad serve --json` prints the plan `myriad plan --json`
// prints for the same flags (the all-reduce crossovers it measures aside), then runs it and says
// whether the memory it uses after warm-up matches the plan.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "plan/run_plan.h"
#include "plan/weight_inventory.h"

namespace myriad::plan {
namespace {

std::string shipped() {
    return std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
}

// `command` through the shell; its output, stdout and stderr together.
std::string output_of(const std::string& command) {
    std::string out;
    FILE* p = popen((command + " 2>&1").c_str(), "r");
    if (!p) return out;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    return out;
}

TEST(RunPlanGpu, BudgetIsTheCardsShare) {
    const MachineGpus machine = probe_machine();
    ASSERT_FALSE(machine.gpus.empty()) << machine.why_none;
    const ModelConfig c = load_model_config(shipped());
    const Checkpoint ckpt = Checkpoint::open(shipped());
    std::vector<TensorInfo> tensors;
    for (const auto& f : ckpt.files())
        tensors.insert(tensors.end(), f->tensors().begin(), f->tensors().end());
    const WeightInventory w = weights_from_headers(c, tensors);
    ModelHeaders h{shipped(), &c, &ckpt, &w};
    RunFlags f;
    f.device = "cuda";
    f.devices = "0";
    RunPlan p = make_run_plan(f, h, machine);
    EXPECT_EQ(p.device, Device::Cuda);
    EXPECT_FALSE(p.kernels.empty());
    const double card = static_cast<double>(machine.gpus[0].memory);
    EXPECT_EQ(p.budget_bytes, static_cast<int64_t>(0.9 * card));
    EXPECT_GT(p.kv_blocks, 0);
    EXPECT_EQ(p.max_model_len, c.max_position_embeddings);
    f.tp = 2;
    f.devices = "0,0";
    p = make_run_plan(f, h, machine);
    EXPECT_EQ(p.budget_bytes, static_cast<int64_t>(0.9 * card / 2));
    EXPECT_EQ(p.all_reduce.two_shot_from, kDefaultTwoShotFrom);
}

TEST(RunPlanGpu, ServeRunsThePlanThatPlanPrints) {
    // A fifth of the card: other GPU tests may run beside this one (ctest -j).
    for (const std::string flags :
         {"--device cuda --gpu-memory-utilization 0.2",
          "--device cuda --gpu-memory-utilization 0.2 --tp 2 --devices 0,0 --max-model-len 4096"}) {
        const std::string planned_out =
            output_of(std::string(MYRIAD_BINARY) + " plan " + shipped() + " --json " + flags);
        const size_t brace = planned_out.find('{');
        ASSERT_NE(brace, std::string::npos) << planned_out;
        auto planned = nlohmann::json::parse(planned_out.substr(brace))["run"];
        ASSERT_FALSE(planned.contains("error")) << planned;
        // serve until it is ready (or fails), then SIGTERM: `echo $$` names its pid first.
        FILE* p = popen(("echo $$; exec timeout 600 " + std::string(MYRIAD_BINARY) + " serve " +
                         shipped() + " --port 0 --json " + flags + " 2>&1")
                            .c_str(),
                        "r");
        ASSERT_NE(p, nullptr);
        char buf[8192];
        ASSERT_NE(fgets(buf, sizeof buf, p), nullptr);
        const int pid = std::stoi(buf);
        nlohmann::json served;
        std::string log;
        while (fgets(buf, sizeof buf, p)) {
            const std::string line = buf;
            if (served.is_null() && line.starts_with("{")) {
                served = nlohmann::json::parse(line);
                continue;
            }
            log += line;
            if (line.find("serving '") != std::string::npos) break;
        }
        kill(pid, SIGTERM);
        while (fgets(buf, sizeof buf, p)) log += buf;
        pclose(p);
        ASSERT_FALSE(served.is_null()) << log;
        for (const char* k : {"measured_two_shot_from", "measured"}) {
            served["all_reduce"].erase(k);
            planned["all_reduce"].erase(k);
        }
        EXPECT_EQ(served, planned) << flags;
        EXPECT_NE(log.find("serving '"), std::string::npos) << log;
        // After loading and warm-up: the GPU memory in use against the plan (a warning names the
        // gap when it is off by more than 5%). cudaMemGetInfo counts every process's memory, so
        // under `ctest -j` another test's allocations can move the figure: it is printed here;
        // run this test alone to judge the plan.
        const size_t mem = log.find("memory: ");
        ASSERT_NE(mem, std::string::npos) << log;
        std::printf("%s: %s\n", flags.c_str(), log.substr(mem, log.find('\n', mem) - mem).c_str());
        if (flags.find("--tp 2") != std::string::npos) {
            EXPECT_NE(log.find("all-reduce: two-shot from"), std::string::npos) << log;
        }
    }
}

}  // namespace
}  // namespace myriad::plan
