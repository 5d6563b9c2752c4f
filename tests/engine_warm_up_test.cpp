// The engine's warm-up step (one step of the largest shape it schedules, run before serving so a
// GPU backend sizes its buffers then): it must leave no trace. Its KV went to blocks the block
// manager later hands out, so a sequence that read a slot before writing it, a warm-up block that
// reached the prefix cache, or state it left in the sampler would change the tokens or logprobs
// of some request kind.
#include <gtest/gtest.h>

#include "sampling_runs.h"

namespace myriad::testing {
namespace {

TEST(EngineWarmUp, LeavesNoTraceInTheOutputs) {
    expect_same_outcomes(run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::On),
                         run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::Off));
}

// The backend-sampling path too: the warm-up sends non-greedy sampling rows.
TEST(EngineWarmUp, LeavesNoTraceWhenTheBackendSamples) {
    expect_same_outcomes(run_request_kinds(Device::Cpu, BackendSampling::On, WarmUp::On),
                         run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::Off));
}

}  // namespace
}  // namespace myriad::testing
