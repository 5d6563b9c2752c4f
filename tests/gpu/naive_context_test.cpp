// The naive form's bounded context (ModelOptions::naive_context_tokens) on a whole model on the
// GPU: chunks of a prompt attending to a context that grows past the bound many times, in
// pieces, give the unbounded CPU model's logits (exact mode), and no step needs more scratch
// than the first: each naive-form call gives back what its kv_b_proj product took
// (Ops::release_scratch), so a warm-up step with a prefill sized the arena for all of them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "golden_reference.h"
#include "gpu_test_util.h"
#include "model/deepseek_v3.h"
#include "model/kv_cache.h"
#include "ops/backend.h"
#include "parallel/cpu_communicator.h"
#include "parallel/cuda/single_gpu_communicator.h"

namespace myriad::testing {
namespace {

TEST(GpuNaiveContext, PiecedChunksMatchCpuWithinTheFirstStepsScratch) {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << why;
    const std::string dir = golden_dir("kimi_k2");
    const ModelConfig config = load_model_config(dir);
    const Checkpoint checkpoint = Checkpoint::open(dir);
    const int64_t bs = 16, blocks = 64, chunk = 32, vocab = config.vocab_size;

    // The bound is above kSkinnyRows, so that by default kv_b_proj runs through cuBLASLt on a
    // BF16 copy of its input taken from scratch; exact mode compares with the CPU.
    ModelOptions bounded;
    bounded.naive_context_tokens = 24;
    const KernelChoices choices = test_kernel_choices();
    KernelChoices exact_choices = choices;
    exact_choices.exact = true;  // F32 products on the GPU
    cuda::CudaOps gpu(0, choices);
    auto exact_gpu = std::make_unique<cuda::CudaOps>(0, exact_choices);
    cuda::SingleGpuCommunicator gpu_comm, exact_comm;
    DeepseekV3 gpu_model(config, checkpoint, gpu, gpu_comm, bounded);
    KvCache gpu_cache(config, gpu, blocks, bs);
    DeepseekV3 exact_model(config, checkpoint, *exact_gpu, exact_comm, bounded);
    KvCache exact_cache(config, *exact_gpu, blocks, bs);
    CpuOps cpu(2);
    CpuCommunicator cpu_comm(std::make_shared<CpuCommGroup>(1), 0);
    DeepseekV3 cpu_model(config, checkpoint, cpu, cpu_comm);
    KvCache cpu_cache(config, cpu, blocks, bs);

    std::mt19937 rng(5);
    size_t first_peak = 0;
    for (int64_t past = 0; past + chunk <= 640; past += chunk) {
        SCOPED_TRACE(::testing::Message() << "context " << past + chunk);
        std::vector<TokenId> ids;
        for (int64_t i = 0; i < chunk; ++i) ids.push_back(static_cast<TokenId>(rng() % vocab));
        const StepInput st = single_sequence_step(ids, past, bs, {int32_t(chunk - 1)});
        std::vector<float> want(vocab), got(vocab), exact(vocab);
        cpu_model.forward(st, cpu_cache, want.data());
        exact_model.forward(st, exact_cache, exact.data());
        EXPECT_LE(rel_err(exact, want), 2e-2);
        gpu_model.forward(st, gpu_cache, got.data());
        EXPECT_LT(rel_err(got, want), INFINITY);  // (BF16 products: a router near-tie may flip)
        if (past == 0)
            first_peak = gpu.scratch_peak();
        else
            EXPECT_EQ(gpu.scratch_peak(), first_peak);
    }
}

}  // namespace
}  // namespace myriad::testing
