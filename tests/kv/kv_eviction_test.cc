// KV eviction (kv/kv_eviction.h) against exact block ids: the window policy's
// choice of blocks, the manager freeing them, the prefix cache seeing only
// blocks computed before the first gap, and the pool whole again at the end.
#include "kv/kv_eviction.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_support.h"

namespace ladder::kv::eviction_test {
namespace {

using Ids = std::vector<BlockId>;
using testing::table;
constexpr BlockId G = kNoBlock;

EvictionPolicy window(int64_t budget, int64_t sinks) {
  return EvictionPolicy{.kind = EvictionKind::kWindow, .budget_tokens = budget, .sink_tokens = sinks};
}

std::unique_ptr<KvCacheManager> manager(int32_t n_blocks, const EvictionPolicy& policy, bool prefix_caching,
                                        TensorType dtype = TensorType::kF32, int block_size = 4,
                                        int32_t n_staging = 0) {
  return testing::arena_manager({.n_layers = 1,
                                 .n_kv_heads = 1,
                                 .head_dim = 8,
                                 .block_size = block_size,
                                 .n_blocks = n_blocks,
                                 .dtype = dtype,
                                 .n_staging = n_staging},
                                prefix_caching, policy);
}

std::vector<int32_t> tokens(int n) { return testing::token_run(n, 100); }

const BlockKey kNs = namespace_digest({"tenant", "m", "t", "f32-b4-kt"});

TEST(KvEviction, PolicyNamesAndChecks) {
  EXPECT_EQ(eviction_kind_from_name("window"), EvictionKind::kWindow);
  EXPECT_EQ(eviction_kind_from_name("none"), EvictionKind::kNone);
  EXPECT_EQ(eviction_kind_from_name("snap"), EvictionKind::kSnap);
  EXPECT_FALSE(eviction_kind_from_name("h2o").has_value());
  EXPECT_EQ(eviction_kind_name(EvictionKind::kWindow), "window");
  // 4 sinks in blocks of 16 take one block: the budget needs 32 tokens.
  EXPECT_TRUE(check_eviction_policy(window(32, 4), 16).is_ok());
  const Status small = check_eviction_policy(window(31, 4), 16);
  EXPECT_EQ(small.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.message().find(">= 32"), std::string::npos) << small.message();
  EXPECT_FALSE(check_eviction_policy(window(32, 17), 16).is_ok());  // 17 sinks: 2 blocks
  EXPECT_TRUE(check_eviction_policy(window(16, 0), 16).is_ok());    // no sinks: a pure window
  EXPECT_FALSE(check_eviction_policy(window(64, -1), 16).is_ok());
  EXPECT_TRUE(check_eviction_policy(EvictionPolicy{}, 16).is_ok());  // none ignores the budget
}

TEST(KvEviction, WindowKeepsSinkBlocksAndTheMostRecentOnes) {
  // Blocks of 4; budget 14 tokens = 3 blocks; 5 sinks = 2 blocks; 1 recent.
  const EvictionPolicy p = window(14, 5);
  const Ids t = {7, 3, 9, 1, 4, 8};
  EXPECT_TRUE(blocks_to_evict(t, 12, p, 4).empty());  // 3 blocks written: within the budget
  EXPECT_EQ(blocks_to_evict(t, 13, p, 4), (std::vector<size_t>{2}));
  EXPECT_EQ(blocks_to_evict(t, 24, p, 4), (std::vector<size_t>{2, 3, 4}));
  // Entries past the written positions (a chunk's blocks) always stay; gaps
  // are not listed again.
  EXPECT_EQ(blocks_to_evict(t, 17, p, 4), (std::vector<size_t>{2, 3}));
  const Ids gapped = {7, 3, G, G, 4, 8};
  EXPECT_EQ(blocks_to_evict(gapped, 24, p, 4), (std::vector<size_t>{4}));
  EXPECT_TRUE(blocks_to_evict(t, 24, EvictionPolicy{}, 4).empty());
}

TEST(KvEviction, SnapKeepsSinksRecentAndTheMostAttendedOlderBlocks) {
  // Blocks of 4; budget 24 tokens = 6 blocks; 4 sinks = 1 block; of the
  // other 5, the 3 most recent and the 2 most attended older ones.
  const EvictionPolicy p{.kind = EvictionKind::kSnap, .budget_tokens = 24, .sink_tokens = 4};
  EXPECT_EQ(p.recent_blocks(4), 3);
  EXPECT_EQ(window(24, 4).recent_blocks(4), 5);
  const Ids t = {20, 21, 22, 23, 24, 25, 26, 27, 28, 29};  // 10 blocks, 40 positions
  const std::vector<float> attention = {9, 0.5f, 3, 0.1f, 0.1f, 2.5f, 0.2f, 1, 1, 1};
  // Candidates: entries 1..6 (0 is the sink; 7, 8, 9 are recent). Kept: 2
  // (3.0) and 5 (2.5).
  EXPECT_EQ(blocks_to_evict(t, 40, p, 4, attention), (std::vector<size_t>{1, 3, 4, 6}));
  // Ties keep the later block; missing scores count 0.
  const std::vector<float> flat = {0, 1, 1, 1};
  EXPECT_EQ(blocks_to_evict(t, 40, p, 4, flat), (std::vector<size_t>{1, 4, 5, 6}));
  // Within the budget nothing goes; gaps are never candidates.
  EXPECT_TRUE(blocks_to_evict(t, 24, p, 4, attention).empty());
  const Ids gapped = {20, G, 22, G, G, 25, 26, 27, 28, 29};
  EXPECT_EQ(blocks_to_evict(gapped, 40, p, 4, attention), (std::vector<size_t>{6}));
}

TEST(KvEviction, ManagerSnapUsesTheAttentionItWasGiven) {
  const EvictionPolicy p{
      .kind = EvictionKind::kSnap, .budget_tokens = 16, .sink_tokens = 4};  // 1 + 2 recent + 1
  auto m = manager(16, p, /*prefix_caching=*/false);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 16));
  m->add_attention(1, std::vector<float>{5, 1, 0.5f});  // shorter than the table: entry 3 got none
  m->add_attention(1, std::vector<float>{0, 1, 0, 2});
  EXPECT_EQ(std::vector<float>(m->attention(1).begin(), m->attention(1).end()),
            (std::vector<float>{5, 2, 0.5f, 2}));
  ASSERT_TRUE(m->allocate(1, 24));
  // Candidates 1, 2, 3 got 2, 0.5 and 2: one is kept, the tie goes to the later.
  EXPECT_EQ(m->evict(1, 24), 2);
  EXPECT_EQ(table(*m, 1), (Ids{0, G, G, 3, 4, 5}));
  m->release(1);
  EXPECT_TRUE(m->attention(1).empty());
  EXPECT_EQ(m->n_free_blocks(), 16);
  m->remove(1);
}

TEST(KvEviction, ManagerFreesExactBlocksAndTheirIdsComeBack) {
  // Blocks of 4, budget 12 tokens (3 blocks), 4 sinks (1 block): the
  // sequence keeps block 0 and its 2 most recent blocks.
  auto m = manager(8, window(12, 4), /*prefix_caching=*/false);
  m->add(1, kNs);
  ASSERT_TRUE(m->allocate(1, 12));
  EXPECT_EQ(m->evict(1, 12), 0);
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2}));
  ASSERT_TRUE(m->allocate(1, 13));  // the 13th position crosses the budget
  EXPECT_EQ(table(*m, 1), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(m->evict(1, 13), 1);
  EXPECT_EQ(table(*m, 1), (Ids{0, G, 2, 3}));
  EXPECT_EQ(m->pool().ref_count(1), 0);
  EXPECT_EQ(m->pool().free_list(), (Ids{4, 5, 6, 7, 1}));  // the freed block joins the clean tail
  EXPECT_EQ(m->live_blocks(1), 3);
  // Generation goes on: positions keep their table entries.
  ASSERT_TRUE(m->allocate(1, 17));
  EXPECT_EQ(table(*m, 1), (Ids{0, G, 2, 3, 4}));
  EXPECT_EQ(m->evict(1, 17), 1);
  EXPECT_EQ(table(*m, 1), (Ids{0, G, G, 3, 4}));
  for (int n = 18; n <= 40; ++n) {  // far past the pool's 8 blocks of history
    ASSERT_TRUE(m->allocate(1, n)) << n;
    m->evict(1, n);
    EXPECT_LE(m->live_blocks(1), 3) << n;
  }
  EXPECT_EQ(table(*m, 1).size(), 10u);
  EXPECT_EQ(table(*m, 1)[0], 0);
  EXPECT_EQ(m->stats().evicted_blocks, 7);
  EXPECT_EQ(m->n_free_blocks(), 5);
  m->remove(1);
  EXPECT_EQ(m->n_free_blocks(), 8);
  EXPECT_EQ(m->stats().blocks_used, 0);
}

TEST(KvEviction, PublishesOnlyBlocksComputedBeforeTheFirstGap) {
  auto m = manager(16, window(12, 4), /*prefix_caching=*/true);
  const auto t = tokens(24);
  m->add(1, kNs);
  // Steps as the scheduler takes them: allocate, compute, publish, evict.
  ASSERT_TRUE(m->allocate(1, 12));
  m->publish(1, t, 12);
  m->evict(1, 12);
  ASSERT_TRUE(m->allocate(1, 16));
  m->publish(1, t, 16);  // block 3 was computed over the whole history
  EXPECT_EQ(m->evict(1, 16), 1);
  EXPECT_EQ(table(*m, 1), (Ids{0, G, 2, 3}));
  EXPECT_EQ(m->pool().n_cached_free(), 1);  // block 1: free, its prefix still cached and intact
  ASSERT_TRUE(m->allocate(1, 24));
  m->publish(1, t, 24);  // blocks 4, 5 saw a gapped history: not published
  m->evict(1, 24);
  EXPECT_EQ(table(*m, 1), (Ids{0, G, G, G, 4, 5}));
  EXPECT_FALSE(m->pool().key(4).has_value());
  EXPECT_FALSE(m->pool().key(5).has_value());

  // Another sequence with the same tokens hits exactly the blocks computed
  // before the gap, the evicted ones included.
  m->add(2, kNs);
  EXPECT_EQ(m->acquire_prefix(2, t), 16);
  EXPECT_EQ(table(*m, 2), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(m->pool().ref_count(0), 2);
  m->remove(1);
  m->remove(2);
  EXPECT_EQ(m->n_free_blocks(), 16);

  // A gapped sequence preempted (released) gives back every block.
  m->add(3, kNs);
  ASSERT_TRUE(m->allocate(3, 24));
  m->evict(3, 24);
  m->release(3);
  EXPECT_EQ(m->n_free_blocks(), 16);
  m->remove(3);
}

TEST(KvEviction, StagedFormatGivesBackTheSlotsOfEvictedBlocks) {
  // q4 in blocks of 16 with 6 staging slots; a pure window of one block.
  auto m = manager(8, window(16, 0), /*prefix_caching=*/false, TensorType::kQ4_0, 16, 6);
  const int32_t slots = m->storage().n_free_staging();
  m->add(1, kNs);
  const auto t = tokens(64);
  ASSERT_TRUE(m->allocate(1, 33));
  m->publish(1, t, 33);  // block 0 unstaged (a whole block past it); block 1 keeps its slot
  EXPECT_EQ(m->storage().n_free_staging(), slots - 2);
  EXPECT_EQ(m->evict(1, 33), 2);  // blocks 0 and 1 (still staged): only block 2 stays
  EXPECT_EQ(table(*m, 1), (Ids{G, G, 2}));
  EXPECT_EQ(m->storage().n_free_staging(), slots - 1);
  ASSERT_TRUE(m->allocate(1, 64));
  m->publish(1, t, 64);
  m->evict(1, 64);
  EXPECT_EQ(table(*m, 1), (Ids{G, G, G, 3}));
  m->remove(1);
  EXPECT_EQ(m->storage().n_free_staging(), slots);
  EXPECT_EQ(m->n_free_blocks(), 8);
}

}  // namespace
}  // namespace ladder::kv::eviction_test
