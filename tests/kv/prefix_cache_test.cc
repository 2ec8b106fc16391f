#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/kv_test_support.h"

namespace ladder::kv::prefix_cache_test {
namespace {

CacheNamespace ns_for(const std::string& scope) {
  return {scope, "model-sha", "tok-sha", "f32-b4"};
}

TEST(BlockKey, ChainDependsOnParentNamespaceAndTokens) {
  const BlockKey ns = namespace_digest(ns_for("tenant-a"));
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const std::vector<int32_t> b = {1, 2, 3, 5};
  const BlockKey root = chain_key(nullptr, ns, a);
  EXPECT_EQ(root, chain_key(nullptr, ns, a));
  EXPECT_NE(root, chain_key(nullptr, ns, b));
  // Same block tokens under a different parent: a different key.
  const BlockKey p1 = chain_key(nullptr, ns, b);
  EXPECT_NE(chain_key(&root, ns, b), chain_key(&p1, ns, b));
  EXPECT_NE(chain_key(&root, ns, a), root);
  // Every namespace field matters.
  for (auto other : {CacheNamespace{"tenant-b", "model-sha", "tok-sha", "f32-b4"},
                     CacheNamespace{"tenant-a", "model-sha2", "tok-sha", "f32-b4"},
                     CacheNamespace{"tenant-a", "model-sha", "tok-sha2", "f32-b4"},
                     CacheNamespace{"tenant-a", "model-sha", "tok-sha", "f16-b4"},
                     // Length prefixes keep field boundaries apart.
                     CacheNamespace{"tenant-am", "odel-sha", "tok-sha", "f32-b4"}}) {
    EXPECT_NE(chain_key(nullptr, namespace_digest(other), a), root) << other.tenant_scope;
  }
  // Golden digests computed independently (Python hashlib over the documented
  // byte layout), so the key format cannot drift silently.
  EXPECT_EQ(ns.hex(), "1cf33ce592d448d87cc5397d510213036bfea90e1ff273aa4357c167b2b641bf");
  EXPECT_EQ(root.hex(), "77ebe112fa511ac9a81e42bc08642e375af69f7d9f6d1cbf22d3b07618dc591c");
}

TEST(PrefixCache, ExtendKeysCoversOnlyFullBlocks) {
  const BlockKey ns = namespace_digest(ns_for("t"));
  std::vector<BlockKey> keys;
  const auto tokens = testing::token_run(11, 100);
  PrefixCache::extend_keys(ns, std::span(tokens).first(5), 4, keys);
  ASSERT_EQ(keys.size(), 1u);
  PrefixCache::extend_keys(ns, tokens, 4, keys);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], chain_key(nullptr, ns, std::span(tokens).subspan(0, 4)));
  EXPECT_EQ(keys[1], chain_key(&keys[0], ns, std::span(tokens).subspan(4, 4)));
}

TEST(PrefixCache, HitsMissesEvictionAndTenantIsolation) {
  BlockPool pool(6, 4);
  PrefixCache cache(pool);
  const auto tokens = testing::token_run(12, 7);
  const BlockKey ns_a = namespace_digest(ns_for("tenant-a"));
  const BlockKey ns_b = namespace_digest(ns_for("tenant-b"));
  std::vector<BlockKey> keys_a, keys_b;
  PrefixCache::extend_keys(ns_a, tokens, 4, keys_a);
  PrefixCache::extend_keys(ns_b, tokens, 4, keys_b);

  // Nothing cached yet: a miss.
  EXPECT_TRUE(cache.acquire(keys_a, 3).empty());
  EXPECT_EQ(cache.queried_blocks(), 3);
  EXPECT_EQ(cache.hit_blocks(), 0);

  // Sequence 1 computes three blocks 0, 1, 2 and publishes them.
  std::vector<BlockId> seq1;
  for (int i = 0; i < 3; ++i) seq1.push_back(*pool.allocate());
  EXPECT_EQ(seq1, (std::vector<BlockId>{0, 1, 2}));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(cache.insert(keys_a[i], seq1[i]));
  EXPECT_EQ(cache.size(), 3u);

  // Same tenant, running concurrently: shares the blocks (refcount 2).
  EXPECT_EQ(cache.acquire(keys_a, 2), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(pool.ref_count(0), 2);
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(cache.hit_blocks(), 2);
  // Another tenant with the same tokens: zero hits.
  EXPECT_TRUE(cache.acquire(keys_b, 3).empty());

  // Everything released: blocks stay cached, LRU in release order.
  pool.release(0);
  pool.release(1);
  for (BlockId b : seq1) pool.release(b);
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(cache.acquire(keys_a, 3), (std::vector<BlockId>{0, 1, 2}));
  for (BlockId b : {0, 1, 2}) pool.release(b);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{3, 4, 5, 0, 1, 2}));

  // A duplicate computed by another sequence is not published twice.
  const BlockId dup = *pool.allocate();
  EXPECT_EQ(dup, 3);
  EXPECT_FALSE(cache.insert(keys_a[0], dup));
  EXPECT_FALSE(pool.key(dup).has_value());
  pool.release(dup);  // clean again: goes to the clean tail
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{4, 5, 3, 0, 1, 2}));

  // Pressure: four allocations take the 3 clean blocks, then evict block 0
  // (the head of the chain), which makes the whole chain unreachable.
  for (int i = 0; i < 4; ++i) (void)pool.allocate();
  EXPECT_FALSE(cache.contains(keys_a[0]));
  EXPECT_TRUE(cache.contains(keys_a[1]));
  EXPECT_TRUE(cache.acquire(keys_a, 3).empty());
}

}  // namespace
}  // namespace ladder::kv::prefix_cache_test
