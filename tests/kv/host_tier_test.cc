// The host KV tier: its LRU bound on its own, then behind the KV cache
// manager -- offload on eviction, copy-back on a chain hit (late) or ahead
// of admission (prefetch), a miss mid-chain, tenant scope, gapped sequences
// and every format byte for byte -- against exact block ids and counters.
#include "kv/host_tier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_support.h"
#include "ops/attention.h"
#include "ops/kv_codec.h"

namespace ladder::kv::host_tier_test {
namespace {

constexpr int kBs = 4;

BlockKey key_of(int i) {
  BlockKey k;
  k.bytes[0] = static_cast<uint8_t>(i);
  k.bytes[1] = 0xAB;
  return k;
}

std::vector<uint8_t> filled(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

void put(HostTier& tier, int i) {
  const std::span<uint8_t> slot = tier.insert(key_of(i));
  ASSERT_FALSE(slot.empty());
  std::memset(slot.data(), i, slot.size());
}

TEST(HostTier, HoldsWholeBlocksAndDropsTheLeastRecentlyUsed) {
  HostTier tier(8 * 3 + 5, 8);  // three 8-byte slots; the 5 bytes left over hold nothing
  EXPECT_EQ(tier.max_blocks(), 3u);
  EXPECT_EQ(tier.capacity_bytes(), 24u);
  for (int i = 0; i < 5; ++i) {
    put(tier, i);
    EXPECT_LE(tier.used_bytes(), tier.capacity_bytes());
  }
  EXPECT_EQ(tier.n_blocks(), 3u);
  EXPECT_EQ(tier.used_bytes(), 24u);
  EXPECT_EQ(tier.dropped_blocks(), 2);
  EXPECT_EQ(tier.lru_order(), (std::vector<BlockKey>{key_of(2), key_of(3), key_of(4)}));
  EXPECT_FALSE(tier.contains(key_of(0)));
  EXPECT_TRUE(tier.find(key_of(0)).empty());

  // A lookup makes a block the most recent: 3 is dropped next, not 2.
  const auto two = tier.find(key_of(2));
  ASSERT_EQ(two.size(), 8u);
  EXPECT_EQ(std::vector<uint8_t>(two.begin(), two.end()), filled(8, 2));
  put(tier, 5);
  EXPECT_EQ(tier.lru_order(), (std::vector<BlockKey>{key_of(4), key_of(2), key_of(5)}));
  // Storing a key it holds copies nothing and only refreshes it.
  EXPECT_TRUE(tier.insert(key_of(4)).empty());
  EXPECT_EQ(tier.lru_order(), (std::vector<BlockKey>{key_of(2), key_of(5), key_of(4)}));
  EXPECT_EQ(tier.dropped_blocks(), 3);
  for (int i : {2, 4, 5}) {
    const auto b = tier.find(key_of(i));
    EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.end()), filled(8, static_cast<uint8_t>(i))) << i;
  }
}

TEST(HostTier, SizesAreCheckedAsConfiguration) {
  const KvShape shape{.n_layers = 2, .n_kv_heads = 1, .head_dim = 2, .block_size = kBs, .n_blocks = 4};
  // f32: 2 layers x (K + V) x 4 tokens x 2 dims x 4 bytes = 128 bytes a block.
  EXPECT_TRUE(check_host_tier(0, shape, false).is_ok());
  EXPECT_TRUE(check_host_tier(128, shape, true).is_ok());
  const Status small = check_host_tier(127, shape, true);
  EXPECT_EQ(small.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.message().find("holds not one KV block of 128 bytes"), std::string::npos) << small.message();
  EXPECT_EQ(check_host_tier(1024, shape, false).code(), StatusCode::kInvalidArgument);
}

// A manager of 4 f32 blocks (128 bytes each) with a host tier of 3 blocks.
struct Fixture {
  static constexpr size_t kBlockBytes = 128;
  std::unique_ptr<KvCacheManager> m;
  explicit Fixture(size_t host_blocks = 3, int32_t n_blocks = 4) {
    auto storage = make_arena_storage(
        {.n_layers = 2, .n_kv_heads = 1, .head_dim = 2, .block_size = kBs, .n_blocks = n_blocks});
    LADDER_CHECK(storage.is_ok(), storage.status().to_string());
    m = std::make_unique<KvCacheManager>(std::move(storage).value(), true, EvictionPolicy{},
                                         host_blocks * kBlockBytes);
  }
  // Every byte says which block it belongs to.
  static std::vector<uint8_t> pattern(int tag) {
    std::vector<uint8_t> b(kBlockBytes);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(tag * 37 + static_cast<int>(i) * 3 + 1);
    return b;
  }
  std::vector<uint8_t> bytes(BlockId id) const {
    std::vector<uint8_t> b(kBlockBytes);
    read_block(m->storage(), id, b);
    return b;
  }
  // Sequence `id` computes `t` (pattern bytes, tags first_tag...) and publishes
  // its full blocks, then finishes: they stay cached in the pool.
  void compute_and_finish(SeqId id, const BlockKey& ns, const std::vector<int32_t>& t, int first_tag = 0) {
    m->add(id, ns);
    ASSERT_TRUE(m->allocate(id, static_cast<int64_t>(t.size())));
    const auto table = m->block_table(id);
    for (size_t j = 0; j < table.size(); ++j) {
      write_block(m->storage(), table[j], pattern(first_tag + static_cast<int>(j)));
    }
    m->publish(id, t, static_cast<int64_t>(t.size()));
    m->remove(id);
  }
  // A sequence of unrelated tokens takes every block (the pool evicts every
  // cached one), then leaves without publishing.
  void flush() {
    m->add(99, kOther);
    ASSERT_TRUE(m->allocate(99, int64_t{m->n_blocks()} * kBs));
    m->remove(99);
  }
  KvCacheStats stats() const { return m->stats(); }
  static inline const BlockKey kOther = namespace_digest({"other", "m", "t", "f32-b4-kt"});
};

const BlockKey kNsA = namespace_digest({"alpha", "m", "t", "f32-b4-kt"});
const BlockKey kNsB = namespace_digest({"beta", "m", "t", "f32-b4-kt"});

std::vector<int32_t> prompt(int n) { return testing::token_run(n, 10); }

TEST(KvHostTier, EvictedBlocksAreOffloadedAndCopiedBackOnAHit) {
  Fixture f;
  const auto a = prompt(9);  // two full blocks and one token
  f.compute_and_finish(1, kNsA, a);
  // Blocks 0 and 1 are cached; 2 went back clean behind the never-used 3.
  EXPECT_EQ(f.m->pool().free_list(), (std::vector<BlockId>{3, 2, 0, 1}));
  EXPECT_EQ(f.stats().host_offloaded_blocks, 0);

  f.flush();  // takes 3, 2, then evicts 0 and 1 into the tier
  KvCacheStats st = f.stats();
  EXPECT_EQ(st.host_offloaded_blocks, 2);
  EXPECT_EQ(st.host_blocks, 2);
  EXPECT_EQ(st.host_bytes_used, 256);
  EXPECT_EQ(st.host_bytes_capacity, 384);
  EXPECT_EQ(f.m->pool().free_list(), (std::vector<BlockId>{3, 2, 0, 1}));  // all clean now

  f.m->add(2, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(2, a), 8);
  // Copied into the head of the free list, in chain order.
  EXPECT_EQ(std::vector<BlockId>(f.m->block_table(2).begin(), f.m->block_table(2).end()),
            (std::vector<BlockId>{3, 2}));
  EXPECT_EQ(f.bytes(3), Fixture::pattern(0));
  EXPECT_EQ(f.bytes(2), Fixture::pattern(1));
  EXPECT_EQ(f.stats().host_prefetched_late_blocks, 0);  // counted once the sequence runs
  ASSERT_TRUE(f.m->allocate(2, 9));
  st = f.stats();
  EXPECT_EQ(st.prefix_queried_blocks, 2);
  EXPECT_EQ(st.prefix_hit_blocks, 0);
  EXPECT_EQ(st.host_prefetched_late_blocks, 2);
  EXPECT_EQ(st.host_prefetched_blocks, 0);
  EXPECT_EQ(st.host_recomputed_blocks, 0);
  // Published again: a third sequence hits them in the pool.
  f.m->add(3, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(3, a), 8);
  ASSERT_TRUE(f.m->allocate(3, 9));
  EXPECT_EQ(f.m->pool().ref_count(3), 2);
  EXPECT_EQ(f.stats().prefix_hit_blocks, 2);
  EXPECT_EQ(f.stats().host_prefetched_late_blocks, 2);
  f.m->remove(2);
  f.m->remove(3);
  // The tier keeps its copies (inclusive): evicting them again copies nothing.
  f.flush();
  EXPECT_EQ(f.stats().host_offloaded_blocks, 2);
  EXPECT_EQ(f.m->n_free_blocks(), 4);
}

TEST(KvHostTier, PrefetchCopiesAheadSoAdmissionHitsThePool) {
  Fixture f;
  const auto a = prompt(13);  // three full blocks and one token
  f.compute_and_finish(1, kNsA, a);  // blocks 0, 1, 2 published; 3 clean
  f.flush();                         // 0, 1, 2 offloaded
  ASSERT_EQ(f.stats().host_offloaded_blocks, 3);

  f.m->add(2, kNsA);
  // At most two blocks now: the chain stops there.
  EXPECT_EQ(f.m->prefetch(2, a, 2), 2);
  EXPECT_TRUE(f.m->block_table(2).empty());  // nothing held by the sequence
  EXPECT_EQ(f.m->pool().n_cached_free(), 2);
  EXPECT_EQ(f.m->n_free_blocks(), 4);
  EXPECT_EQ(f.stats().host_prefetched_blocks, 2);

  // Admission: two pool hits (the prefetched blocks), the third block late.
  EXPECT_EQ(f.m->acquire_prefix(2, a), 12);
  ASSERT_TRUE(f.m->allocate(2, 13));
  const std::vector<BlockId> table(f.m->block_table(2).begin(), f.m->block_table(2).end());
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table, (std::vector<BlockId>{3, 0, 1, 2}));
  for (int j = 0; j < 3; ++j) EXPECT_EQ(f.bytes(table[static_cast<size_t>(j)]), Fixture::pattern(j)) << j;
  const KvCacheStats st = f.stats();
  EXPECT_EQ(st.prefix_queried_blocks, 3);
  EXPECT_EQ(st.prefix_hit_blocks, 2);
  EXPECT_EQ(st.host_prefetched_blocks, 2);
  EXPECT_EQ(st.host_prefetched_late_blocks, 1);
  EXPECT_EQ(st.host_recomputed_blocks, 0);
  f.m->remove(2);

  // Prefetch when the whole chain is in the pool copies nothing; it holds
  // the chain's three free blocks, and a request not queued yet finds them too.
  f.m->add(3, kNsA);
  EXPECT_EQ(f.m->prefetch(3, a, 4), 3);
  EXPECT_EQ(f.m->prefetch(kNsA, a, 2), 2);
  EXPECT_EQ(f.stats().host_prefetched_blocks, 2);
  f.m->remove(3);
}

TEST(KvHostTier, ARequestNotQueuedYetIsPrefetchedByItsNamespace) {
  Fixture f;
  const auto a = prompt(13);
  f.compute_and_finish(1, kNsA, a);
  f.flush();
  EXPECT_EQ(f.m->prefetch(kNsB, a, 4), 0);  // another tenant's: nothing
  EXPECT_EQ(f.m->prefetch(kNsA, a, 4), 3);
  EXPECT_EQ(f.stats().host_prefetched_blocks, 3);
  f.m->add(2, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(2, a), 12);
  ASSERT_TRUE(f.m->allocate(2, 13));
  const KvCacheStats st = f.stats();
  EXPECT_EQ(st.prefix_hit_blocks, 3);
  EXPECT_EQ(st.host_prefetched_late_blocks, 0);
  f.m->remove(2);
}

TEST(KvHostTier, CopiesForASequenceThatDidNotRunCountAsPrefetched) {
  Fixture f;
  const auto a = prompt(9);
  f.compute_and_finish(1, kNsA, a);
  f.flush();
  f.m->add(2, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(2, a), 8);  // copied back, then admission fails
  f.m->release(2);
  KvCacheStats st = f.stats();
  EXPECT_EQ(st.host_prefetched_blocks, 2);
  EXPECT_EQ(st.host_prefetched_late_blocks, 0);
  EXPECT_EQ(st.host_recomputed_blocks, 0);
  EXPECT_EQ(f.m->acquire_prefix(2, a), 8);  // the next attempt hits the pool
  ASSERT_TRUE(f.m->allocate(2, 9));
  st = f.stats();
  EXPECT_EQ(st.prefix_hit_blocks, 2);
  EXPECT_EQ(st.host_prefetched_blocks, 2);
  EXPECT_EQ(st.host_prefetched_late_blocks, 0);
  f.m->remove(2);
}

TEST(KvHostTier, AMissMidChainRecomputesFromThereOnly) {
  Fixture f;  // the tier holds 3 blocks
  const auto a = prompt(13);
  f.compute_and_finish(1, kNsA, a);  // 0, 1, 2 published
  f.flush();                         // tier (LRU first): A0 A1 A2
  // A sequence sharing only A's first block takes it back: A0 becomes the
  // tier's most recent.
  f.m->add(2, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(2, std::vector<int32_t>(a.begin(), a.begin() + 5)), 4);
  EXPECT_EQ(f.m->block_table(2)[0], 3);
  ASSERT_TRUE(f.m->allocate(2, 5));
  f.m->remove(2);
  // Another prompt's block goes through the pool into the tier, which drops
  // its least recently used block: A1.
  f.compute_and_finish(3, kNsA, testing::token_run(5, 500), 9);
  f.flush();
  KvCacheStats st = f.stats();
  EXPECT_EQ(st.host_offloaded_blocks, 4);  // A0 was held already: not copied again
  EXPECT_EQ(st.host_dropped_blocks, 1);
  std::vector<BlockKey> keys;
  PrefixCache::extend_keys(kNsA, a, kBs, keys);
  EXPECT_TRUE(f.m->host_tier()->contains(keys[0]));
  EXPECT_FALSE(f.m->host_tier()->contains(keys[1]));
  EXPECT_TRUE(f.m->host_tier()->contains(keys[2]));

  f.m->add(4, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(4, a), 4);  // A0 back; A1 missing ends the chain although A2 is there
  EXPECT_EQ(f.bytes(f.m->block_table(4)[0]), Fixture::pattern(0));
  EXPECT_EQ(f.m->blocks_needed(4, 13), 3);  // prefill computes them
  ASSERT_TRUE(f.m->allocate(4, 13));
  st = f.stats();
  EXPECT_EQ(st.host_prefetched_late_blocks, 2);  // A0 twice
  EXPECT_EQ(st.host_recomputed_blocks, 2);       // A1 and A2
  f.m->remove(4);
}

TEST(KvHostTier, AnotherTenantGetsNoHitFromTheTier) {
  Fixture f;
  const auto a = prompt(13);
  f.compute_and_finish(1, kNsA, a);
  f.flush();
  ASSERT_EQ(f.stats().host_blocks, 3);

  // The same tokens under tenant B: no pool hit, nothing copied, all recomputed.
  f.m->add(2, kNsB);
  EXPECT_EQ(f.m->prefetch(2, a, 4), 0);
  EXPECT_EQ(f.m->acquire_prefix(2, a), 0);
  EXPECT_TRUE(f.m->block_table(2).empty());
  ASSERT_TRUE(f.m->allocate(2, 13));
  KvCacheStats st = f.stats();
  EXPECT_EQ(st.prefix_hit_blocks, 0);
  EXPECT_EQ(st.host_prefetched_blocks, 0);
  EXPECT_EQ(st.host_prefetched_late_blocks, 0);
  EXPECT_EQ(st.host_recomputed_blocks, 3);
  f.m->remove(2);

  // Tenant A still gets all three.
  f.m->add(3, kNsA);
  EXPECT_EQ(f.m->acquire_prefix(3, a), 12);
  ASSERT_TRUE(f.m->allocate(3, 13));
  EXPECT_EQ(f.stats().host_prefetched_late_blocks, 3);
  f.m->remove(3);
}

TEST(KvHostTier, NothingComputedAfterAGapReachesTheTier) {
  auto storage = make_arena_storage({.n_layers = 2, .n_kv_heads = 1, .head_dim = 2, .block_size = kBs, .n_blocks = 6});
  ASSERT_TRUE(storage.is_ok());
  // A sink block and one recent block.
  const EvictionPolicy window{.kind = EvictionKind::kWindow, .budget_tokens = 8, .sink_tokens = 4};
  KvCacheManager m(std::move(storage).value(), true, window, 6 * 128);
  const auto t = prompt(20);
  m.add(1, kNsA);
  ASSERT_TRUE(m.allocate(1, 12));
  m.publish(1, t, 12);              // blocks 0, 1, 2 published
  EXPECT_EQ(m.evict(1, 12), 1);     // block 1 dropped: the sequence is gapped
  ASSERT_TRUE(m.allocate(1, 20));
  m.publish(1, t, 20);              // gapped: blocks 3 and 4 are not published
  m.remove(1);
  m.add(2, Fixture::kOther);        // evicts every cached block
  ASSERT_TRUE(m.allocate(2, 24));
  m.remove(2);
  std::vector<BlockKey> keys;
  PrefixCache::extend_keys(kNsA, t, kBs, keys);
  EXPECT_EQ(m.stats().host_offloaded_blocks, 3);
  for (int j = 0; j < 5; ++j) EXPECT_EQ(m.host_tier()->contains(keys[static_cast<size_t>(j)]), j < 3) << j;
}

// Writes positions [0, n) of every layer's K and V the way a forward pass
// does (store, then seal full blocks), with values that differ by layer,
// side, position and element.
void write_kv(const KvCacheManager& m, SeqId id, int n) {
  const ops::PagedKv& kv = m.layers();
  const auto table = m.block_table(id);
  const KvShape& s = m.storage().shape();
  std::vector<float> vec(static_cast<size_t>(s.n_kv_heads * s.head_dim));
  for (size_t l = 0; l < kv.k.size(); ++l) {
    for (const ops::PagedKvLayer* layer : {&kv.k[l], &kv.v[l]}) {
      const float side = layer == &kv.k[l] ? 1.0f : -1.0f;
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < vec.size(); ++i) {
          vec[i] = side * (0.37f * static_cast<float>(p) - 0.11f * static_cast<float>(i) + static_cast<float>(l));
        }
        ops::kv_store(*layer, table.data(), p, vec.data());
      }
      for (int p = 0; p < n; ++p) ops::kv_seal(*layer, table.data(), p);
    }
  }
}

// What attention reads of positions [0, n_full) with a query past them.
std::vector<float> decoded(const KvCacheManager& m, SeqId id, int n_full) {
  std::vector<float> out;
  const ops::PagedKv& kv = m.layers();
  const KvShape& s = m.storage().shape();
  for (size_t l = 0; l < kv.k.size(); ++l) {
    for (const ops::PagedKvLayer* layer : {&kv.k[l], &kv.v[l]}) {
      for (int p = 0; p < n_full; ++p) {
        for (int h = 0; h < s.n_kv_heads; ++h) {
          for (int i = 0; i < s.head_dim; ++i) {
            out.push_back(ops::kv_decode_elem(*layer, m.block_table(id).data(), p, h, i, n_full + 1));
          }
        }
      }
    }
  }
  return out;
}

TEST(KvHostTier, EveryFormatComesBackByteForByte) {
  for (TensorType dtype : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    SCOPED_TRACE(tensor_type_name(dtype));
    // head_dim != block_size: a q4 block's K and V take different bytes.
    const KvShape shape{.n_layers = 2,
                        .n_kv_heads = 2,
                        .head_dim = 8,
                        .block_size = kBs,
                        .n_blocks = 3,
                        .dtype = dtype,
                        .n_staging = 3};
    auto storage = make_arena_storage(shape);
    ASSERT_TRUE(storage.is_ok()) << storage.status().to_string();
    const size_t block_bytes = storage.value()->block_bytes();
    KvCacheManager m(std::move(storage).value(), true, EvictionPolicy{}, 2 * block_bytes);
    const BlockKey ns = namespace_digest({"alpha", "m", "t", kv_format_name(shape)});
    const auto t = prompt(9);  // two full blocks, sealed; the last token staged in q4
    m.add(1, ns);
    ASSERT_TRUE(m.allocate(1, 9));
    write_kv(m, 1, 9);
    m.publish(1, t, 9);
    const std::vector<BlockId> before(m.block_table(1).begin(), m.block_table(1).end());
    std::vector<std::vector<uint8_t>> bytes(2, std::vector<uint8_t>(block_bytes));
    for (size_t j = 0; j < 2; ++j) read_block(m.storage(), before[j], bytes[j]);
    const std::vector<float> values = decoded(m, 1, 8);
    m.remove(1);

    m.add(2, Fixture::kOther);  // evicts both published blocks into the tier
    ASSERT_TRUE(m.allocate(2, 12));
    m.remove(2);
    ASSERT_EQ(m.stats().host_offloaded_blocks, 2);

    m.add(3, ns);
    ASSERT_EQ(m.acquire_prefix(3, t), 8);
    const std::vector<BlockId> after(m.block_table(3).begin(), m.block_table(3).end());
    ASSERT_EQ(after.size(), 2u);
    for (size_t j = 0; j < 2; ++j) {
      EXPECT_NE(after[j], before[j]) << "the copy went to another block";
      std::vector<uint8_t> back(block_bytes);
      read_block(m.storage(), after[j], back);
      EXPECT_EQ(back, bytes[j]) << "block " << j;
      EXPECT_FALSE(m.storage().is_staged(after[j]));
    }
    EXPECT_EQ(decoded(m, 3, 8), values);
    m.remove(3);
    EXPECT_EQ(m.n_free_blocks(), 3);
  }
}

}  // namespace
}  // namespace ladder::kv::host_tier_test
