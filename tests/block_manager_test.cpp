#include <gtest/gtest.h>

#include <algorithm>

#include "engine/block_manager.h"

namespace myriad {
namespace {

std::vector<TokenId> iota_tokens(int n, int start = 0) {
    std::vector<TokenId> t;
    for (int i = 0; i < n; ++i) t.push_back(start + i);
    return t;
}

TEST(BlockManager, GrowReleaseAndCounts) {
    BlockManager bm(8, 4);
    std::vector<BlockId> a, b;
    EXPECT_TRUE(bm.grow(a, 9));  // 3 blocks
    EXPECT_EQ(a.size(), 3u);
    EXPECT_TRUE(bm.grow(b, 20));  // 5 blocks
    EXPECT_EQ(bm.num_free(), 0);
    std::vector<BlockId> c;
    EXPECT_FALSE(bm.grow(c, 1));
    EXPECT_TRUE(c.empty());
    bm.check_invariants();
    bm.release(a);
    EXPECT_EQ(bm.num_free(), 3);
    EXPECT_TRUE(a.empty());
    bm.release(b);
    EXPECT_EQ(bm.num_free(), 8);
    bm.check_invariants();
}

TEST(BlockManager, PrefixCacheSharesFullBlocksAndKeepsOneTokenToCompute) {
    BlockManager bm(16, 4);
    auto tokens = iota_tokens(10);  // blocks [0..3], [4..7], partial [8, 9]
    std::vector<BlockId> a;
    std::vector<uint64_t> ha;
    ASSERT_TRUE(bm.grow(a, 10));
    bm.register_full_blocks(a, tokens, 10, ha);
    EXPECT_EQ(ha.size(), 2u);
    // Same first 9 tokens: two full blocks shared.
    auto other = iota_tokens(9);
    auto hit = bm.take_cached_prefix(other);
    ASSERT_EQ(hit.size(), 2u);
    EXPECT_EQ(hit[0], a[0]);
    EXPECT_EQ(hit[1], a[1]);
    // Exactly 8 tokens: only one block may be taken, one token must remain to compute.
    auto eight = iota_tokens(8);
    EXPECT_EQ(bm.take_cached_prefix(eight).size(), 1u);
    // A different first token shares nothing, even though block 2's tokens are equal.
    auto diff = iota_tokens(10);
    diff[0] = 99;
    EXPECT_TRUE(bm.take_cached_prefix(diff).empty());
    bm.check_invariants();
}

TEST(BlockManager, FreedCachedBlocksAreReusedThenEvictedLeastRecentlyUsed) {
    BlockManager bm(4, 2);
    auto t1 = iota_tokens(5, 0), t2 = iota_tokens(5, 100);
    std::vector<BlockId> a, b;
    std::vector<uint64_t> ha, hb;
    ASSERT_TRUE(bm.grow(a, 5));  // 3 blocks
    bm.register_full_blocks(a, t1, 5, ha);
    bm.release(a);  // free, still cached
    EXPECT_EQ(bm.num_free(), 4);
    auto again = bm.take_cached_prefix(t1);
    EXPECT_EQ(again.size(), 2u);
    EXPECT_EQ(bm.num_free(), 2);
    bm.release(again);
    // A new sequence needing all 4 blocks evicts the cached ones.
    ASSERT_TRUE(bm.grow(b, 8));
    bm.register_full_blocks(b, iota_tokens(8, 100), 8, hb);
    bm.release(b);
    EXPECT_TRUE(bm.take_cached_prefix(t1).empty());
    EXPECT_EQ(bm.take_cached_prefix(t2).size(), 2u);
    bm.check_invariants();
}

// A rejected draft's blocks go back (shrink), ahead of free blocks that still hold a cached
// prefix, which stay findable.
TEST(BlockManager, ShrinkGivesBackARejectedDraftsBlocksFirst) {
    BlockManager bm(6, 4);
    const std::vector<TokenId> cached = iota_tokens(9);
    std::vector<BlockId> old;
    ASSERT_TRUE(bm.grow(old, 9));
    std::vector<uint64_t> hashes;
    bm.register_full_blocks(old, cached, 8, hashes);  // two full blocks cached
    bm.release(old);
    std::vector<BlockId> seq;
    ASSERT_TRUE(bm.grow(seq, 6));   // 2 blocks: the never-used ones first
    ASSERT_TRUE(bm.grow(seq, 14));  // the draft's: 4 blocks
    EXPECT_EQ(seq.size(), 4u);
    const std::vector<BlockId> draft_blocks(seq.begin() + 2, seq.end());
    bm.shrink(seq, 7);  // 7 accepted tokens: 2 blocks
    EXPECT_EQ(seq.size(), 2u);
    bm.check_invariants();
    // The next blocks handed out are those the draft gave back, not the cached ones.
    std::vector<BlockId> next;
    ASSERT_TRUE(bm.grow(next, 8));
    std::sort(next.begin(), next.end());
    std::vector<BlockId> want = draft_blocks;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(next, want);
    bm.release(next);
    bm.shrink(seq, 8);  // nothing past the blocks it needs
    EXPECT_EQ(seq.size(), 2u);
    bm.release(seq);
    EXPECT_EQ(bm.take_cached_prefix(cached).size(), 2u);
    bm.check_invariants();
}

}  // namespace
}  // namespace myriad
