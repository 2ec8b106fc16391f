// PrefixCache: maps the key of a FULL block of computed KV to the block that
// holds it, so a request whose prompt starts with the same tokens, under the
// same namespace (tenant scope, model, tokenizer, KV format), skips their
// prefill. Keys form a hash chain (each includes its parent's), so a lookup
// is the longest run of leading blocks found in the map.
//
// Blocks stay cached after their sequences finish (refcount 0, on the pool's
// LRU list) until the pool hands them out again; the pool then tells the cache
// (eviction listener) to forget the key; an eviction observer (the host
// tier, host_tier.h) may copy the block's bytes out first.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"
#include "kv/block_pool.h"

namespace ladder::kv {

class PrefixCache {
 public:
  // Installs itself as the pool's eviction listener; the pool must outlive it.
  explicit PrefixCache(BlockPool& pool);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Extends `keys` (the chain of a sequence's full blocks so far) with the keys
  // of the further full blocks of `tokens` (a prefix of the sequence's
  // tokens; keys already there for later blocks are kept).
  static void extend_keys(const BlockKey& ns_digest, std::span<const int32_t> tokens, int block_size,
                          std::vector<BlockKey>& keys);

  // The cached blocks of the longest leading run of `keys`, at most max_blocks
  // of them; takes one reference on each returned block.
  std::vector<BlockId> acquire(std::span<const BlockKey> keys, size_t max_blocks);

  // The block holding key, without a reference or a count; nullopt when none.
  std::optional<BlockId> lookup(const BlockKey& key) const;
  // A hit outside acquire() (a chain that continues past a block copied back
  // from the host tier): one reference on key's block, counted as a hit (its
  // query was counted by the acquire() that stopped before it).
  std::optional<BlockId> take(const BlockKey& key);

  // Publishes a full, written block under `key`. When another block already
  // holds that key the cache keeps the first one and returns false.
  bool insert(const BlockKey& key, BlockId block);

  // Called with (block, key) when the pool takes a cached block for new
  // content: the block still holds the key's bytes, and the cache forgets the
  // key right after.
  void set_eviction_observer(BlockPool::EvictionListener observer) { on_evict_ = std::move(observer); }

  bool contains(const BlockKey& key) const { return map_.count(key) != 0; }
  size_t size() const { return map_.size(); }

  // Counters since construction.
  int64_t queried_blocks() const { return queried_blocks_; }
  int64_t hit_blocks() const { return hit_blocks_; }

 private:
  BlockPool& pool_;
  BlockPool::EvictionListener on_evict_;
  std::unordered_map<BlockKey, BlockId, BlockKeyHash> map_;
  int64_t queried_blocks_ = 0;
  int64_t hit_blocks_ = 0;
};

}  // namespace ladder::kv
