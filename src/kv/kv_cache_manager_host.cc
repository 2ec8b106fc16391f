// KvCacheManager's host tier: offload on eviction, copy-back on a chain hit,
// prefetch for waiting sequences (kv_cache_manager.h, host_tier.h). Block
// bytes move with kv_transfer's read_block / write_block, the copy a rung-2
// transfer uses, so every format moves byte for byte.
#include <fmt/format.h>

#include <algorithm>

#include "common/check.h"
#include "kv/kv_cache_manager.h"

namespace ladder::kv {

Status check_host_tier(size_t host_tier_bytes, const KvShape& shape, bool prefix_caching) {
  if (host_tier_bytes == 0) return Status::ok();
  if (!prefix_caching) {
    return invalid_argument("a host KV tier keeps published prefix blocks; it needs the prefix cache on");
  }
  LADDER_ASSIGN_OR_RETURN(size_t block_bytes, kv_block_bytes(shape));
  if (host_tier_bytes < block_bytes) {
    return invalid_argument(fmt::format("a host KV tier of {} bytes holds not one KV block of {} bytes ({})",
                                        host_tier_bytes, block_bytes, kv_format_name(shape)));
  }
  return Status::ok();
}

void KvCacheManager::offload(BlockId block, const BlockKey& key) {
  const std::span<uint8_t> slot = host_->insert(key);
  if (slot.empty()) return;  // held already (it was copied back from the tier): nothing moves
  read_block(*storage_, block, slot);
  ++offloaded_blocks_;
}

std::optional<BlockId> KvCacheManager::restore(const BlockKey& key) {
  if (!host_->contains(key) || pool_.n_free() == 0) return std::nullopt;
  // Allocation may evict a cached block into the tier, and a full tier drops
  // its least recently used block for it: look the bytes up only after.
  const std::optional<BlockId> b = pool_.allocate();
  LADDER_CHECK(b.has_value(), "the pool ran dry below its free count");
  const std::span<const uint8_t> bytes = host_->find(key);
  if (bytes.empty()) {
    pool_.release(*b);
    return std::nullopt;
  }
  write_block(*storage_, *b, bytes);
  cache_->insert(key, *b);
  return b;
}

int64_t KvCacheManager::continue_from_host(SeqKv& s, size_t max_blocks) {
  int64_t copied = 0;
  for (size_t j = s.table.size(); j < max_blocks; ++j) {
    if (auto hit = cache_->take(s.keys[j])) {
      s.table.append(*hit);
      continue;
    }
    const std::optional<BlockId> b = restore(s.keys[j]);
    if (!b) break;
    s.table.append(*b);
    ++copied;
  }
  return copied;
}

void KvCacheManager::settle_host_counts(SeqKv& s, bool ran) {
  if (ran) {
    prefetched_late_blocks_ += s.pending_late;
    recomputed_blocks_ += s.pending_recomputed;
  } else {
    prefetched_blocks_ += s.pending_late;
  }
  s.pending_late = 0;
  s.pending_recomputed = 0;
}

int64_t KvCacheManager::prefetch_chain(std::span<const BlockKey> keys, int64_t max_blocks) {
  if (host_ == nullptr || max_blocks <= 0) return 0;
  // The chain's blocks are held while later ones are copied, so that no
  // copy evicts an earlier block of the same chain.
  std::vector<BlockId> held;
  int64_t n_free_held = 0;
  for (const BlockKey& key : keys) {
    if (n_free_held == max_blocks) break;
    if (auto b = cache_->lookup(key)) {
      if (pool_.ref_count(*b) == 0) ++n_free_held;
      pool_.ref(*b);
      held.push_back(*b);
      continue;
    }
    const std::optional<BlockId> b = restore(key);
    if (!b) break;
    held.push_back(*b);
    ++n_free_held;
    ++prefetched_blocks_;
  }
  for (BlockId b : held) pool_.release(b);
  return n_free_held;
}

std::vector<BlockKey> KvCacheManager::prefetch_keys(const BlockKey& ns_digest, std::span<const int32_t> tokens) const {
  std::vector<BlockKey> keys;
  if (tokens.empty()) return keys;
  const int bs = block_size();
  PrefixCache::extend_keys(ns_digest, tokens.first((tokens.size() - 1) / static_cast<size_t>(bs) * bs), bs, keys);
  return keys;
}

int64_t KvCacheManager::prefetch(const BlockKey& ns_digest, std::span<const int32_t> tokens, int64_t max_blocks) {
  if (host_ == nullptr || tokens.empty() || max_blocks <= 0) return 0;
  return prefetch_chain(prefetch_keys(ns_digest, tokens), max_blocks);
}

int64_t KvCacheManager::prefetch(SeqId id, std::span<const int32_t> tokens, int64_t max_blocks) {
  SeqKv& s = at(id);
  if (host_ == nullptr || !s.table.empty() || tokens.empty() || max_blocks <= 0) return 0;
  const int bs = block_size();
  PrefixCache::extend_keys(s.ns_digest, tokens, bs, s.keys);
  const auto n_chain = static_cast<size_t>((static_cast<int64_t>(tokens.size()) - 1) / bs);
  return prefetch_chain(std::span(s.keys).first(n_chain), max_blocks);
}

}  // namespace ladder::kv
