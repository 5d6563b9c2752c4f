// Sampling across vocabulary slices on the GPU (ops/sample_candidates.h): the CUDA candidate
// kernel gives the CPU's candidates bit for bit on random rows (ties by id), the CUDA choice
// from gathered candidates gives the whole row's token (the host's choose_token and the GPU's own
// one-rank sampler), and the engine at TP 2 and 4 on one GPU takes the tokens of the same ranks
// gathering whole rows and, in exact mode (F32 activations and F32 on the wire), of TP 1. In the
// default mode the all-reduces cross in BF16, so TP 2's logits differ from TP 1's by about 1e-2
// of their size and a sampled token may flip: there only the whole-row comparison is exact.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu_test_util.h"
#include "sampling_runs.h"
#include "slice_sampling_cases.h"

namespace myriad::testing {
namespace {

TEST_F(GpuOpsTest, SliceCandidatesMatchTheCpuAndChooseTheWholeRowsToken) {
    int checked = 0;
    for (auto [vocab, world] : std::vector<std::pair<int64_t, int64_t>>{
             {320, 2}, {320, 8}, {1000, 8}, {64, 8}, {163840, 8}, {163840, 2}}) {
        for (int rep = 0; rep < 3; ++rep) {
            SCOPED_TRACE(::testing::Message()
                         << "vocab " << vocab << " world " << world << " rep " << rep);
            const int64_t n = vocab > 10000 ? 16 : 40, shard = vocab / world;
            const SliceCase c = make_slice_case(rng, n, vocab);
            std::vector<std::vector<float>> cands_gpu;
            SliceSampling s0;
            for (int64_t r = 0; r < world; ++r) {
                const SliceSampling s = slice_sampling(c.sampling, r * shard, shard);
                if (r == 0) s0 = s;
                const int64_t m = static_cast<int64_t>(s.rows.size());
                ASSERT_GT(m, 0);
                std::vector<float> part = slice_columns(c, r * shard, shard);
                std::vector<float> want(static_cast<size_t>(m * 2 * s.k));
                std::vector<float> cpu_part = part;
                cpu.slice_candidates(host(cpu_part, {n, shard}), s, r * shard,
                                     Tensor(want.data(), DType::F32, {m, 2 * s.k}));
                Tensor out = poisoned(DType::F32, {m, 2 * s.k});
                gpu->slice_candidates(dev(part, {n, shard}), s, r * shard, out);
                const std::vector<float> got = fetch(out);
                ASSERT_EQ(got.size(), want.size());
                EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
                    << "rank " << r << ": the GPU's candidates differ from the CPU's";
                cands_gpu.push_back(got);
            }
            const int64_t m = static_cast<int64_t>(s0.rows.size());
            std::vector<int32_t> got(n, -1);
            gpu->choose_candidates(dev(side_by_side(cands_gpu, m), {m, world * 2 * s0.k}), s0,
                                   c.sampling, got.data());
            // The GPU's own sampler on the whole rows (one rank): the rule the ranks follow.
            std::vector<int32_t> one(n, -1);
            std::vector<float> host_rows(static_cast<size_t>(n * vocab));
            StepSampling all = c.sampling;
            for (SampleRow& r : all.rows) r.host = false;
            gpu->sample(dev(c.logits, {n, vocab}), all, one.data(), host_rows.data());
            for (int32_t i : s0.rows) {
                EXPECT_EQ(got[i], whole_row_token(c, i)) << "row " << i;
                EXPECT_EQ(got[i], one[i]) << "row " << i << " against one rank's sampler";
                ++checked;
            }
            for (int32_t i : s0.full) EXPECT_EQ(got[i], -1) << "row " << i << " was not asked";
        }
    }
    EXPECT_GT(checked, 200);  // rows chosen from candidates (the rest need whole rows)
}

// The engine with its ranks on GPU 0 at TP 2 and 4: choosing from candidates (Auto) gives the
// tokens, logprobs and finish reasons of gathering every row whole (Off), and the tokens of one
// GPU rank sampling on its device; and fewer bytes cross.
TEST(GpuSlicedSampling, EngineAtTp2And4OnOneGpuGivesTheWholeRowsTokens) {
    // kimi_k2's experts have 16 rows, under the CUDA kernels' 8 a rank when split 4 ways, so
    // TP 4 runs on tp8_bf16 (256 rows), with the kinds that fit its 256-token vocabulary: the
    // structured-output and reasoning kinds are made for kimi_k2's 320 tokens (sampling_runs.h).
    const std::vector<std::pair<std::string, std::vector<int>>> cases = {{"kimi_k2", {2}},
                                                                         {"tp8_bf16", {2, 4}}};
    for (const auto& [golden, tps] : cases)
        for (bool exact : {false, true})
            for (bool top_k : {false, true}) {
                KernelOverrides mode(exact ? "exact=1" : "exact=0");
                KindsRun run;
                run.golden = golden;
                if (golden == "tp8_bf16") {
                    const std::vector<SamplingParams> kinds = request_kinds();
                    for (size_t i = 0; i < kinds.size(); ++i) {
                        bool fits = !kinds[i].constraint;
                        for (const auto& [id, bias] : kinds[i].logit_bias) fits &= id < 256;
                        if (fits) run.only.push_back(i);
                    }
                }
                run.top_k_everywhere = top_k;
                const auto one = run_request_kinds(Device::Cuda, BackendSampling::Auto,
                                                   WarmUp::Auto, nullptr, 3, nullptr, run);
                for (int tp : tps) {
                    SCOPED_TRACE(::testing::Message()
                                 << golden << " tp " << tp << " top_k everywhere " << top_k
                                 << (exact ? ", exact" : ", bf16"));
                    run.tp = tp;
                    run.devices.assign(static_cast<size_t>(tp), 0);
                    int64_t whole_bytes = 0, cand_bytes = 0;
                    run.gathered_bytes = &whole_bytes;
                    const auto whole = run_request_kinds(Device::Cuda, BackendSampling::Off,
                                                         WarmUp::Off, nullptr, 3, nullptr, run);
                    run.gathered_bytes = &cand_bytes;
                    const auto cand = run_request_kinds(Device::Cuda, BackendSampling::Auto,
                                                        WarmUp::Auto, nullptr, 3, nullptr, run);
                    expect_same_outcomes(cand, whole);
                    ASSERT_EQ(cand.size(), one.size());
                    int differing = 0;
                    for (size_t i = 0; i < one.size(); ++i) {
                        if (exact) {
                            EXPECT_EQ(cand[i].tokens, one[i].tokens) << "request kind " << i;
                        }
                        differing += cand[i].tokens != one[i].tokens;
                    }
                    std::printf("%s tp %d%s: %d of %zu request kinds differ from TP 1\n",
                                golden.c_str(), tp, exact ? " exact" : " bf16", differing,
                                one.size());
                    EXPECT_GT(cand_bytes, 0);
                    std::printf(
                        "tp %d, top_k everywhere %d: %lld bytes gathered from candidates, %lld "
                        "whole (warm-up step included in the first)\n",
                        tp, int(top_k), static_cast<long long>(cand_bytes),
                        static_cast<long long>(whole_bytes));
                }
            }
}

}  // namespace
}  // namespace myriad::testing
