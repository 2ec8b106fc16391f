// Staging slots of the q4 KV format behind the KV cache manager: who holds
// one when, all-or-nothing allocation, truncation (speculative rollback),
// fork and release -- against exact counts and the stored values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/half.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_test_support.h"
#include "ops/kv_codec.h"

namespace ladder::kv::staging_test {
namespace {

constexpr int kBs = 4;

// Prefix caching off where a test truncates (a published block is never cut).
std::unique_ptr<KvCacheManager> q4_manager(int32_t n_blocks, int32_t n_staging, bool prefix_caching = true) {
  return testing::arena_manager({.n_layers = 1,
                                 .n_kv_heads = 1,
                                 .head_dim = 4,
                                 .block_size = kBs,
                                 .n_blocks = n_blocks,
                                 .dtype = TensorType::kQ4_0,
                                 .n_staging = n_staging},
                                prefix_caching);
}

std::vector<int32_t> tokens(int n) { return testing::token_run(n, 10); }

const BlockKey kNs = namespace_digest({"a", "m", "t", "q4-b4-kt"});

// Writes positions [from, to) of a sequence's K with value 0.1 * pos + 0.01 * dim,
// sealing full blocks as a forward pass does.
void write(const KvCacheManager& m, SeqId id, int from, int to) {
  const ops::PagedKvLayer& k = m.layers().k[0];
  const auto table = m.block_table(id);
  for (int p = from; p < to; ++p) {
    const float vec[4] = {0.1f * p, 0.1f * p + 0.01f, 0.1f * p + 0.02f, 0.1f * p + 0.03f};
    ops::kv_store(k, table.data(), p, vec);
  }
  for (int p = from; p < to; ++p) ops::kv_seal(k, table.data(), p);
}

float read(const KvCacheManager& m, SeqId id, int pos, int dim, int n_keys) {
  return ops::kv_decode_elem(m.layers().k[0], m.block_table(id).data(), pos, 0, dim, n_keys);
}

TEST(KvStaging, EveryAllocatedBlockTakesASlotUntilABlockPastIt) {
  auto m = q4_manager(8, 3);
  const KvStorage& s = m->storage();
  EXPECT_EQ(s.n_free_staging(), 3);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 9));  // 3 blocks, 3 slots
  EXPECT_EQ(s.n_free_staging(), 0);
  m->add(2, kNs);
  EXPECT_FALSE(m->allocate(2, 1));  // blocks are free but no slot: nothing taken
  EXPECT_TRUE(m->block_table(2).empty());
  EXPECT_EQ(m->n_free_blocks(), 5);
  const auto t = tokens(9);
  m->publish(1, t, 5);  // block 0 sealed, but within the one-block slack
  EXPECT_EQ(s.n_free_staging(), 0);
  m->publish(1, t, 8);  // a whole block past block 0
  EXPECT_EQ(s.n_free_staging(), 1);
  EXPECT_FALSE(s.is_staged(m->block_table(1)[0]));
  EXPECT_TRUE(s.is_staged(m->block_table(1)[1]));
  ASSERT_TRUE(m->allocate(2, 1));
  EXPECT_EQ(s.n_free_staging(), 0);
  m->release(1);
  EXPECT_EQ(s.n_free_staging(), 2);
  m->remove(2);
  m->remove(1);
  EXPECT_EQ(s.n_free_staging(), 3);
  EXPECT_EQ(m->n_free_blocks(), 8);
}

TEST(KvStaging, TruncateWithinTheSlackKeepsF16Values) {
  auto m = q4_manager(8, 4, false);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 10));
  write(*m, 1, 0, 10);
  m->publish(1, tokens(10), 10);              // block 0 unstaged, block 1 (sealed) kept
  const float before = read(*m, 1, 5, 1, 6);  // as a query at position 5 read it
  EXPECT_EQ(before, f16_to_f32(f32_to_f16(0.51f)));
  m->truncate(1, 6);  // rejected tokens 6..9: block 2 goes, block 1 is partial again
  EXPECT_EQ(m->block_table(1).size(), 2u);
  EXPECT_EQ(m->storage().n_free_staging(), 3);
  EXPECT_EQ(read(*m, 1, 5, 1, 6), before);  // the F16 tokens were still there
  write(*m, 1, 6, 8);                       // refill and reseal
  EXPECT_NEAR(read(*m, 1, 7, 3, 8), 0.73f, 0.02f);
  m->remove(1);
  EXPECT_EQ(m->storage().n_free_staging(), 4);
}

TEST(KvStaging, TruncateIntoAnUnstagedBlockRefillsItFromTheSealedBytes) {
  auto m = q4_manager(8, 4, false);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 12));
  write(*m, 1, 0, 12);
  m->publish(1, tokens(12), 12);  // blocks 0 and 1 unstaged
  EXPECT_EQ(m->storage().n_free_staging(), 3);
  const float sealed = read(*m, 1, 5, 2, 12);
  m->truncate(1, 6);
  EXPECT_TRUE(m->storage().is_staged(m->block_table(1)[1]));
  EXPECT_EQ(read(*m, 1, 5, 2, 6), f16_to_f32(f32_to_f16(sealed)));  // lossy: the 4-bit value
  EXPECT_NEAR(sealed, 0.52f, 0.01f);
  m->remove(1);
  EXPECT_EQ(m->storage().n_free_staging(), 4);
}

TEST(KvStaging, ForkCopiesAPartialBlockWithItsStagedTokens) {
  auto m = q4_manager(8, 4);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 6));
  write(*m, 1, 0, 6);
  ASSERT_TRUE(m->fork(1, 2, 6));
  const auto parent = m->block_table(1), child = m->block_table(2);
  EXPECT_EQ(child[0], parent[0]);  // the full block is shared
  EXPECT_NE(child[1], parent[1]);  // the partial one copied, with a slot of its own
  EXPECT_TRUE(m->storage().is_staged(child[1]));
  EXPECT_EQ(m->storage().n_free_staging(), 1);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(read(*m, 2, 5, d, 6), read(*m, 1, 5, d, 6));
  m->remove(1);
  m->remove(2);
  EXPECT_EQ(m->storage().n_free_staging(), 4);
}

TEST(KvStaging, StorageSizesCountTheSlots) {
  KvShape shape{.n_layers = 2,
                .n_kv_heads = 1,
                .head_dim = 4,
                .block_size = kBs,
                .n_blocks = 10,
                .dtype = TensorType::kQ4_0,
                .n_staging = 3};
  // K: 4 channels x (4 param bytes + 2 nibble bytes); V: 4 tokens x (4 + 2);
  // staging 4 x 4 f16 = 32 bytes, per layer K and V.
  EXPECT_EQ(*kv_block_bytes(shape), 2u * (24 + 24));
  EXPECT_EQ(*kv_staging_bytes(shape), 2u * 2 * 32);
  EXPECT_EQ(*kv_storage_bytes(shape), 10u * 96 + 3u * 128);
  EXPECT_EQ(*kv_blocks_that_fit(shape, 3 * 128 + 96 * 7 + 50), 7);
  EXPECT_EQ(*kv_blocks_that_fit(shape, 100), 0);
  shape.n_staging = 0;
  EXPECT_EQ(make_arena_storage(shape).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv_format_name(shape), "q4-b4-kt");
}

}  // namespace
}  // namespace ladder::kv::staging_test
