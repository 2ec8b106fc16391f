#include "kv/prefix_cache.h"

#include <algorithm>

#include "common/check.h"

namespace ladder::kv {

PrefixCache::PrefixCache(BlockPool& pool) : pool_(pool) {
  pool_.set_eviction_listener([this](BlockId block, const BlockKey& key) {
    auto it = map_.find(key);
    if (it == map_.end() || it->second != block) return;
    if (on_evict_) on_evict_(block, key);
    map_.erase(it);
  });
}

PrefixCache::~PrefixCache() {
  pool_.set_eviction_listener(nullptr);
}

void PrefixCache::extend_keys(const BlockKey& ns_digest, std::span<const int32_t> tokens, int block_size,
                              std::vector<BlockKey>& keys) {
  LADDER_CHECK(block_size > 0, "block size must be positive");
  const size_t bs = static_cast<size_t>(block_size);
  const size_t n_full = tokens.size() / bs;
  for (size_t i = keys.size(); i < n_full; ++i) {
    const BlockKey* parent = i == 0 ? nullptr : &keys[i - 1];
    keys.push_back(chain_key(parent, ns_digest, tokens.subspan(i * bs, bs)));
  }
}

std::vector<BlockId> PrefixCache::acquire(std::span<const BlockKey> keys, size_t max_blocks) {
  std::vector<BlockId> blocks;
  const size_t n = std::min(keys.size(), max_blocks);
  queried_blocks_ += static_cast<int64_t>(n);
  for (size_t i = 0; i < n; ++i) {
    auto it = map_.find(keys[i]);
    if (it == map_.end()) break;
    pool_.ref(it->second);
    blocks.push_back(it->second);
  }
  hit_blocks_ += static_cast<int64_t>(blocks.size());
  return blocks;
}

std::optional<BlockId> PrefixCache::lookup(const BlockKey& key) const {
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

std::optional<BlockId> PrefixCache::take(const BlockKey& key) {
  auto b = lookup(key);
  if (!b) return std::nullopt;
  pool_.ref(*b);
  ++hit_blocks_;
  return b;
}

bool PrefixCache::insert(const BlockKey& key, BlockId block) {
  LADDER_CHECK(pool_.ref_count(block) > 0, "only a referenced (just written) block can be published");
  const auto& held = pool_.key(block);
  if (held.has_value()) {
    // Already published (a shared hit block, or re-inserted after recompute).
    LADDER_CHECK(*held == key, "a block cannot hold two different prefixes");
    return false;
  }
  auto [it, inserted] = map_.emplace(key, block);
  if (!inserted) return false;
  pool_.set_key(block, key);
  return true;
}

}  // namespace ladder::kv
