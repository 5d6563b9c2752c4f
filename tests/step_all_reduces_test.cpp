// A step's all-reduces (parallel/step_all_reduces.h): the counts since the step began, by size,
// each costed by the group's estimate; no total where a size was not measured.
#include "parallel/step_all_reduces.h"

#include <gtest/gtest.h>

namespace myriad {
namespace {

class CountingGroup final : public CommGroup {
  public:
    RankBarrier& barrier() override { return barrier_; }
    std::map<size_t, int64_t> all_reduce_counts() const override { return counts; }
    AllReduceEstimate all_reduce_estimate(size_t bytes) const override {
        if (bytes > 1000000) return {};
        return {bytes < 100000 ? "one-shot" : "two-shot", bytes < 100000 ? 10.0 : 40.0};
    }
    std::map<size_t, int64_t> counts;

  private:
    RankBarrier barrier_{1, std::chrono::seconds(1)};
};

TEST(StepAllReduces, CountsSinceTheStepByteSizeAndCostsThem) {
    CountingGroup g;
    g.counts = {{57344, 5}, {458752, 2}};
    const std::map<size_t, int64_t> before = g.counts;
    g.counts[57344] += 123;
    g.counts[458752] += 0;  // none this step
    g.counts[229376] = 4;   // a size first seen in this step
    const StepAllReduces s = step_all_reduces(g, before);
    ASSERT_EQ(s.sizes.size(), 2u);
    EXPECT_EQ(s.sizes[0].bytes, 57344u);
    EXPECT_EQ(s.sizes[0].count, 123);
    EXPECT_EQ(s.sizes[0].algorithm, "one-shot");
    EXPECT_EQ(s.sizes[1].bytes, 229376u);
    EXPECT_EQ(s.sizes[1].count, 4);
    EXPECT_EQ(s.sizes[1].algorithm, "two-shot");
    EXPECT_DOUBLE_EQ(s.ms, (123 * 10.0 + 4 * 40.0) * 1e-3);
    g.counts[4000000] = 1;  // not measured: no total
    EXPECT_LT(step_all_reduces(g, before).ms, 0);
    EXPECT_TRUE(step_all_reduces(g, g.counts).sizes.empty());
}

}  // namespace
}  // namespace myriad
