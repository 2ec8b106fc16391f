#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace ladder::kv::block_pool_test {
namespace {

BlockKey key_of(uint8_t tag) {
  BlockKey k;
  k.bytes[0] = tag;
  return k;
}

TEST(BlockPool, AllocatesInIdOrderAndCountsRefs) {
  BlockPool pool(4, 16);
  EXPECT_EQ(pool.n_blocks(), 4);
  EXPECT_EQ(pool.block_size(), 16);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.ref_count(0), 1);
  pool.ref(1);
  EXPECT_EQ(pool.ref_count(1), 2);
  EXPECT_EQ(pool.n_used(), 2);
  EXPECT_EQ(pool.n_free(), 2);
  pool.release(1);
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), 3);
  EXPECT_EQ(pool.allocate(), std::nullopt);
  EXPECT_EQ(pool.n_free(), 0);
}

TEST(BlockPool, CleanBlocksGoBeforeCachedOnesAndCachedAreLru) {
  BlockPool pool(5, 4);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(pool.allocate(), i);
  // Blocks 1, 3, 0 hold cached prefixes and are released in that order; 4 and 2 are clean.
  pool.set_key(1, key_of(1));
  pool.set_key(3, key_of(3));
  pool.set_key(0, key_of(0));
  pool.release(1);
  pool.release(4);
  pool.release(3);
  pool.release(2);
  pool.release(0);
  EXPECT_EQ(pool.n_cached_free(), 3);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{4, 2, 1, 3, 0}));

  std::vector<std::pair<BlockId, uint8_t>> evicted;
  pool.set_eviction_listener([&](BlockId id, const BlockKey& k) { evicted.emplace_back(id, k.bytes[0]); });
  EXPECT_EQ(pool.allocate(), 4);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(pool.allocate(), 1);  // least recently released cached block
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0], (std::pair<BlockId, uint8_t>{1, 1}));
  EXPECT_FALSE(pool.key(1).has_value());

  // Reviving cached block 0 (a prefix hit) takes it off the free list.
  pool.ref(0);
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{3}));
  EXPECT_EQ(pool.allocate(), 3);
  EXPECT_EQ(evicted.size(), 2u);
  EXPECT_EQ(pool.allocate(), std::nullopt);
  // Released again, 0 keeps its key and goes to the LRU tail.
  pool.release(0);
  EXPECT_TRUE(pool.key(0).has_value());
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{0}));
}

TEST(BlockPool, MisuseIsACheckFailure) {
  BlockPool pool(2, 16);
  EXPECT_DEATH(pool.release(0), "release");
  EXPECT_DEATH(pool.ref(1), "no cached prefix");
  EXPECT_DEATH(pool.ref_count(7), "out of range");
}

}  // namespace
}  // namespace ladder::kv::block_pool_test
