// Who holds what: the shards Layout gives each rank cover every tensor exactly once (or whole on
// every rank), and under expert parallelism each routed expert lives whole on exactly one rank.
#include "parallel/layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace myriad {
namespace {

TEST(Layout, ShardsCoverEachTensorOnce) {
    for (int tp : {1, 2, 4, 8}) {
        std::vector<int> rows(64, 0), cols(96, 0), vocab(320, 0);
        int64_t heads = 0;
        for (int r = 0; r < tp; ++r) {
            const Layout l(tp, false, r);
            const TensorShard s = l.shard(ShardKind::Rows, 64, 96);
            ASSERT_TRUE(s.held);
            EXPECT_EQ(s.cols, (Slice{0, 96}));
            for (int64_t i = s.rows.begin; i < s.rows.end; ++i) ++rows[i];
            const TensorShard c = l.shard(ShardKind::Cols, 64, 96);
            EXPECT_EQ(c.rows, (Slice{0, 64}));
            for (int64_t i = c.cols.begin; i < c.cols.end; ++i) ++cols[i];
            for (int64_t i = l.vocab(320).begin; i < l.vocab(320).end; ++i) ++vocab[i];
            heads += l.local_heads(8);
            EXPECT_EQ(l.shard(ShardKind::Replicated, 64, 96).rows, (Slice{0, 64}));
            EXPECT_EQ(l.experts(16), (Slice{0, 16}));  // TP-MoE: every expert, sliced
        }
        for (int n : rows) EXPECT_EQ(n, 1) << tp;
        for (int n : cols) EXPECT_EQ(n, 1) << tp;
        for (int n : vocab) EXPECT_EQ(n, 1) << tp;
        EXPECT_EQ(heads, 8);
    }
}

TEST(Layout, ExpertParallelPlacesWholeExperts) {
    for (int tp : {2, 4, 8}) {
        for (int64_t n_experts : {4, 8, 16, 384}) {
            std::vector<int> owners(static_cast<size_t>(n_experts), 0);
            for (int r = 0; r < tp; ++r) {
                const Layout l(tp, true, r);
                EXPECT_EQ(l.ep(), tp);
                for (int64_t e = 0; e < n_experts; ++e) {
                    const TensorShard s = l.shard(ShardKind::Cols, 32, 64, e, n_experts);
                    EXPECT_EQ(s.held, l.holds_expert(e, n_experts));
                    if (!s.held) continue;
                    ++owners[static_cast<size_t>(e)];
                    EXPECT_EQ(s.rows, (Slice{0, 32}));  // whole
                    EXPECT_EQ(s.cols, (Slice{0, 64}));
                }
                // Attention and the shared experts stay tensor-parallel.
                EXPECT_EQ(l.shard(ShardKind::Cols, 32, 64).cols.size(), 64 / tp);
            }
            for (int n : owners) EXPECT_EQ(n, 1) << tp << " ranks, " << n_experts << " experts";
        }
    }
    // The planner's bytes: the fullest rank's share of the experts.
    EXPECT_EQ(Layout(8, true).rank_bytes(384, ShardKind::Cols, true, 384), 48);
    EXPECT_EQ(Layout(8, false).rank_bytes(384, ShardKind::Cols, true, 384), 48);
    EXPECT_EQ(Layout(8, true).rank_bytes(100, ShardKind::Replicated, false, 384), 100);
    EXPECT_EQ(Layout(4, true).label(), "TP=4+EP");
    EXPECT_EQ(Layout(4, false).label(), "TP=4");
}

}  // namespace
}  // namespace myriad
