// The KV cache manager against exact block ids and reference counts.
#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/kv_test_support.h"

namespace ladder::kv::cache_manager_test {
namespace {

using Ids = std::vector<BlockId>;
using testing::table;

std::unique_ptr<KvCacheManager> manager(int32_t n_blocks, bool prefix_caching = true) {
  return testing::arena_manager({.n_layers = 1, .n_kv_heads = 1, .head_dim = 2, .block_size = 4,
                                 .n_blocks = n_blocks, .dtype = TensorType::kF32},
                                prefix_caching);
}

std::vector<int32_t> tokens(int n, int32_t first = 10) { return testing::token_run(n, first); }

const BlockKey kNsA = namespace_digest({"a", "m", "t", "f32-b4-kt"});
const BlockKey kNsB = namespace_digest({"b", "m", "t", "f32-b4-kt"});

TEST(KvCacheManager, AllocatesAllOrNothingAndReportsCapacity) {
  auto m = manager(4);
  EXPECT_EQ(m->capacity_tokens(), 16);
  m->add(1, kNsA);
  EXPECT_EQ(m->blocks_needed(1, 9), 3);
  ASSERT_TRUE(m->allocate(1, 9));
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(m->blocks_needed(1, 12), 0);
  EXPECT_EQ(m->free_tokens(), 4);
  m->add(2, kNsA);
  EXPECT_FALSE(m->allocate(2, 5));  // needs 2, 1 free: nothing taken
  EXPECT_TRUE(table(*m, 2).empty());
  EXPECT_EQ(m->n_free_blocks(), 1);
  m->remove(1);
  m->remove(2);
  EXPECT_EQ(m->n_free_blocks(), 4);
}

TEST(KvCacheManager, PrefixHitsArePerNamespaceAndLeaveTheLastTokenToCompute) {
  auto m = manager(8);
  const auto t = tokens(12);
  m->add(1, kNsA);
  EXPECT_EQ(m->acquire_prefix(1, t), 0);
  ASSERT_TRUE(m->allocate(1, 12));
  m->publish(1, t, 12);
  m->remove(1);
  EXPECT_EQ(m->stats().blocks_cached, 3);

  m->add(2, kNsA);
  EXPECT_EQ(m->acquire_prefix(2, t), 8);  // 3 blocks cached, the last token must run
  EXPECT_EQ(table(*m, 2), (Ids{0, 1}));
  EXPECT_EQ(m->pool().ref_count(0), 1);
  m->add(3, kNsB);
  EXPECT_EQ(m->acquire_prefix(3, t), 0);  // another tenant: no hit
  m->add(4, kNsA);
  EXPECT_EQ(m->acquire_prefix(4, tokens(13)), 12);
  EXPECT_EQ(table(*m, 4), (Ids{0, 1, 2}));
  EXPECT_EQ(m->pool().ref_count(0), 2);
  for (SeqId id : {2, 3, 4}) m->remove(id);
  EXPECT_EQ(m->stats().blocks_used, 0);
}

TEST(KvCacheManager, ReleaseKeepsTheSequenceAndTruncateFreesTheTail) {
  auto m = manager(8);
  const auto t = tokens(14);
  m->add(1, kNsA);
  ASSERT_TRUE(m->allocate(1, 14));
  m->publish(1, t, 8);  // two full blocks published
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2, 3}));
  // Rejected speculative positions 10..13: block 3 goes back, block 2 stays.
  m->truncate(1, 10);
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(m->pool().ref_count(3), 0);
  m->release(1);
  EXPECT_TRUE(m->contains(1));
  EXPECT_TRUE(table(*m, 1).empty());
  EXPECT_EQ(m->stats().blocks_used, 0);
  // The published blocks survived in the cache.
  EXPECT_EQ(m->acquire_prefix(1, t), 8);
  m->remove(1);
}

TEST(KvCacheManager, TruncatingIntoAPublishedBlockIsABug) {
  auto m = manager(4);
  const auto t = tokens(8);
  m->add(1, kNsA);
  ASSERT_TRUE(m->allocate(1, 8));
  m->publish(1, t, 8);
  EXPECT_DEATH(m->truncate(1, 6), "published");
}

TEST(KvCacheManager, ForkSharesFullBlocksAndCopiesThePartialOne) {
  auto m = manager(6);
  m->add(1, kNsA);
  ASSERT_TRUE(m->allocate(1, 10));
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2}));
  // Mark the partial block's bytes so the copy can be seen.
  const ops::PagedKvLayer& k = m->layers().k[0];
  k.base[2 * k.block_stride_bytes] = 77;
  ASSERT_TRUE(m->fork(1, 2, 10));
  EXPECT_EQ(table(*m, 2), (Ids{0, 1, 3}));
  EXPECT_EQ(m->pool().ref_count(0), 2);
  EXPECT_EQ(m->pool().ref_count(2), 1);
  EXPECT_EQ(k.base[3 * k.block_stride_bytes], 77);
  // A fork at a block boundary copies nothing.
  ASSERT_TRUE(m->fork(1, 3, 8));
  EXPECT_EQ(table(*m, 3), (Ids{0, 1}));
  EXPECT_EQ(m->pool().ref_count(1), 3);
  for (SeqId id : {1, 2, 3}) m->remove(id);
  EXPECT_EQ(m->n_free_blocks(), 6);
}

TEST(KvCacheManager, WithoutPrefixCachingNothingIsKept) {
  auto m = manager(4, /*prefix_caching=*/false);
  const auto t = tokens(9);
  m->add(1, kNsA);
  ASSERT_TRUE(m->allocate(1, 9));
  m->publish(1, t, 9);
  m->remove(1);
  m->add(2, kNsA);
  EXPECT_EQ(m->acquire_prefix(2, t), 0);
  EXPECT_EQ(m->stats().blocks_cached, 0);
  m->remove(2);
}

}  // namespace
}  // namespace ladder::kv::cache_manager_test
