// The step scratch arena (CPU backend; the CUDA one is the same design): scratch given back by
// release_scratch is taken again by the next request, and the arena merged at the next reset
// holds what was in use at once, counting what was released.
#include <gtest/gtest.h>

#include "ops/cpu/cpu_ops.h"

namespace myriad::testing {
namespace {

char* at(const Tensor& t) {
    return static_cast<char*>(t.data);
}

TEST(ScratchArena, ReleasedScratchIsTakenAgain) {
    CpuOps ops(1);
    ops.reset_scratch();
    Tensor a = ops.scratch(DType::F32, {100});
    const ScratchMark mark = ops.mark_scratch();
    Tensor b = ops.scratch(DType::F32, {1000});
    ops.release_scratch(mark);
    Tensor c = ops.scratch(DType::F32, {1000});
    EXPECT_EQ(at(c), at(b));
    EXPECT_EQ(at(b) - at(a), 448);  // 400 bytes rounded to 64
}

// A request past the chunk (1 MiB) takes a new one; after the release the next request starts
// that chunk again. The reset then merges the chunks into one that holds the first tensor and
// the large one side by side: the peak counted the released bytes.
TEST(ScratchArena, ReleaseAfterANewChunkAndTheMergedPeak) {
    CpuOps ops(1);
    ops.reset_scratch();
    ops.scratch(DType::F32, {100});
    const ScratchMark mark = ops.mark_scratch();
    Tensor big = ops.scratch(DType::F32, {int64_t{1} << 19});  // 2 MiB
    ops.release_scratch(mark);
    Tensor small = ops.scratch(DType::F32, {10});
    EXPECT_EQ(at(small), at(big));
    ops.reset_scratch();
    Tensor a2 = ops.scratch(DType::F32, {100});
    Tensor big2 = ops.scratch(DType::F32, {int64_t{1} << 19});
    EXPECT_EQ(at(big2) - at(a2), 448);  // one chunk of the peak
}

}  // namespace
}  // namespace myriad::testing
