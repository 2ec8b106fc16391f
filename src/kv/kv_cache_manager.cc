#include "kv/kv_cache_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/check.h"

namespace ladder::kv {
namespace {

int64_t blocks_for(int64_t n_tokens, int block_size) { return (n_tokens + block_size - 1) / block_size; }

}  // namespace

KvCacheManager::KvCacheManager(std::unique_ptr<KvStorage> storage, bool prefix_caching,
                               const EvictionPolicy& eviction, size_t host_tier_bytes)
    : storage_(std::move(storage)),
      pool_(storage_->shape().n_blocks, storage_->shape().block_size),
      eviction_(eviction) {
  const Status st = check_eviction_policy(eviction_, pool_.block_size());
  LADDER_CHECK(st.is_ok(), st.message());
  if (prefix_caching) cache_ = std::make_unique<PrefixCache>(pool_);
  if (host_tier_bytes > 0) {
    const Status host = check_host_tier(host_tier_bytes, storage_->shape(), prefix_caching);
    LADDER_CHECK(host.is_ok(), host.message());
    host_ = std::make_unique<HostTier>(host_tier_bytes, storage_->block_bytes());
    cache_->set_eviction_observer([this](BlockId block, const BlockKey& key) { offload(block, key); });
  }
}

KvCacheManager::~KvCacheManager() {
  for (auto& [id, s] : seqs_) s.table.release_all(pool_);
}

KvCacheManager::SeqKv& KvCacheManager::at(SeqId id) {
  auto it = seqs_.find(id);
  LADDER_CHECK(it != seqs_.end(), fmt::format("sequence {} is unknown to the KV cache", id));
  return it->second;
}

const KvCacheManager::SeqKv& KvCacheManager::at(SeqId id) const {
  auto it = seqs_.find(id);
  LADDER_CHECK(it != seqs_.end(), fmt::format("sequence {} is unknown to the KV cache", id));
  return it->second;
}

void KvCacheManager::add(SeqId id, const BlockKey& ns_digest) {
  auto [it, inserted] = seqs_.try_emplace(id);
  LADDER_CHECK(inserted, fmt::format("sequence {} is already in the KV cache", id));
  it->second.ns_digest = ns_digest;
}

void KvCacheManager::unstage_from(SeqKv& s, size_t from) {
  for (size_t j = std::max(from, s.staged_from); j < s.table.size(); ++j) storage_->unstage(s.table[j]);
  s.staged_from = std::min(s.staged_from, from);
}

void KvCacheManager::remove(SeqId id) {
  settle_host_counts(at(id), false);
  unstage_from(at(id), 0);
  at(id).table.release_all(pool_);
  seqs_.erase(id);
}

int64_t KvCacheManager::acquire_prefix(SeqId id, std::span<const int32_t> tokens) {
  SeqKv& s = at(id);
  LADDER_CHECK(s.table.empty(), "prefix hits are taken only by a sequence without blocks");
  const std::shared_ptr<const KvBlockSet> staged = std::move(s.staged);
  s.staged.reset();
  if ((cache_ == nullptr && staged == nullptr) || tokens.empty()) return 0;
  const int bs = block_size();
  PrefixCache::extend_keys(s.ns_digest, tokens, bs, s.keys);
  const auto max_blocks = static_cast<size_t>((static_cast<int64_t>(tokens.size()) - 1) / bs);
  if (cache_ != nullptr) {
    for (BlockId b : cache_->acquire(s.keys, max_blocks)) s.table.append(b);
  }
  if (host_ != nullptr) s.pending_late = continue_from_host(s, max_blocks);
  if (staged != nullptr) adopt_staged(s, *staged, max_blocks);
  if (host_ != nullptr) s.pending_recomputed = static_cast<int64_t>(max_blocks - std::min(max_blocks, s.table.size()));
  s.n_published = static_cast<int64_t>(s.table.size());
  s.staged_from = s.table.size();  // full, sealed blocks
  return static_cast<int64_t>(s.table.size()) * bs;
}

int64_t KvCacheManager::blocks_needed(SeqId id, int64_t n_tokens) const {
  const int64_t need = blocks_for(n_tokens, block_size()) - static_cast<int64_t>(at(id).table.size());
  return need > 0 ? need : 0;
}

bool KvCacheManager::allocate(SeqId id, int64_t n_tokens) {
  SeqKv& s = at(id);
  const int64_t need = blocks_needed(id, n_tokens);
  if (need > pool_.n_free() || need > storage_->n_free_staging()) return false;
  settle_host_counts(s, true);
  for (int64_t i = 0; i < need; ++i) {
    auto b = pool_.allocate();
    LADDER_CHECK(b.has_value(), "the pool ran dry below its free count");
    s.table.append(*b);
    storage_->stage(*b);
  }
  return true;
}

void KvCacheManager::publish(SeqId id, std::span<const int32_t> tokens, int64_t n_computed) {
  SeqKv& s = at(id);
  const int bs = block_size();
  while (s.staged_from < s.table.size() && static_cast<int64_t>(s.staged_from + 2) * bs <= n_computed) {
    storage_->unstage(s.table[s.staged_from++]);
  }
  if (cache_ == nullptr || s.gapped) return;
  const int64_t n_full = std::min<int64_t>(n_computed / bs, static_cast<int64_t>(s.table.size()));
  if (n_full <= s.n_published) return;
  PrefixCache::extend_keys(s.ns_digest, tokens.first(static_cast<size_t>(n_full) * bs), bs, s.keys);
  for (int64_t j = s.n_published; j < n_full; ++j) {
    cache_->insert(s.keys[static_cast<size_t>(j)], s.table[static_cast<size_t>(j)]);
  }
  s.n_published = n_full;
}

void KvCacheManager::stage_import(SeqId id, std::shared_ptr<const KvBlockSet> blocks) {
  at(id).staged = std::move(blocks);
}

void KvCacheManager::adopt_staged(SeqKv& s, const KvBlockSet& staged, size_t max_blocks) {
  if (!check_block_set(staged, storage_->shape()).is_ok()) {
    refused_blocks_ += static_cast<int64_t>(staged.n_blocks());
    return;
  }
  for (size_t j = s.table.size(); j < max_blocks; ++j) {
    const int64_t i = static_cast<int64_t>(j) - staged.first_block;
    if (i < 0 || i >= static_cast<int64_t>(staged.n_blocks())) break;
    if (!(staged.keys[static_cast<size_t>(i)] == s.keys[j])) {
      // Another tenant's, model's or prompt's block: never taken.
      refused_blocks_ += static_cast<int64_t>(staged.n_blocks()) - i;
      break;
    }
    auto b = pool_.allocate();
    if (!b) break;
    write_block(*storage_, *b, staged.block(static_cast<size_t>(i)));
    if (cache_ != nullptr) cache_->insert(s.keys[j], *b);
    s.table.append(*b);
    ++imported_blocks_;
  }
}

void KvCacheManager::release(SeqId id) {
  SeqKv& s = at(id);
  settle_host_counts(s, false);
  unstage_from(s, 0);
  s.staged.reset();
  s.table.release_all(pool_);
  s.n_published = 0;
  s.gapped = false;
  s.attention.clear();
}

void KvCacheManager::add_attention(SeqId id, std::span<const float> mass) {
  SeqKv& s = at(id);
  if (s.attention.size() < mass.size()) s.attention.resize(mass.size(), 0.0f);
  for (size_t i = 0; i < mass.size(); ++i) s.attention[i] += mass[i];
}

int64_t KvCacheManager::evict(SeqId id, int64_t n_computed) {
  SeqKv& s = at(id);
  const std::vector<size_t> drop =
      blocks_to_evict(s.table.blocks(), n_computed, eviction_, block_size(), s.attention);
  for (size_t j : drop) {
    // A dropped block still holding its staging slot (q4: only the slack
    // block, the one before the most recent) gives it back. Every entry
    // before it was unstaged when the block after it filled.
    if (j >= s.staged_from) storage_->unstage(s.table[j]);
    s.table.evict(j, pool_);
  }
  if (!drop.empty()) {
    s.staged_from = std::max(s.staged_from, drop.back() + 1);
    s.gapped = true;
  }
  evicted_blocks_ += static_cast<int64_t>(drop.size());
  return static_cast<int64_t>(drop.size());
}

void KvCacheManager::truncate(SeqId id, int64_t n_tokens) {
  SeqKv& s = at(id);
  LADDER_CHECK(n_tokens >= 0, "truncate to a negative length");
  const int bs = block_size();
  const int64_t keep = blocks_for(n_tokens, bs);
  LADDER_CHECK(n_tokens >= s.n_published * bs, "truncate would rewrite a published block");
  if (keep < static_cast<int64_t>(s.table.size())) unstage_from(s, static_cast<size_t>(keep));
  s.table.truncate(static_cast<size_t>(keep), pool_);
  if (s.attention.size() > static_cast<size_t>(keep)) s.attention.resize(static_cast<size_t>(keep));
  s.n_published = std::min(s.n_published, keep);
  // The last kept block, cut back to partly filled, takes its tokens from
  // staging again; one already unstaged gets them back from its sealed bytes.
  if (n_tokens % bs != 0 && static_cast<size_t>(keep) <= s.table.size() &&
      static_cast<size_t>(keep - 1) < s.staged_from) {
    const BlockId b = s.table[static_cast<size_t>(keep - 1)];
    if (!storage_->is_staged(b) && storage_->n_free_staging() < std::numeric_limits<int32_t>::max()) {
      LADDER_CHECK(storage_->n_free_staging() > 0, "no free KV staging slot to cut a sealed block back");
      storage_->stage(b);
      storage_->unseal(b);
    }
    s.staged_from = static_cast<size_t>(keep - 1);
  }
  // Keys of blocks past the cut describe tokens that may change.
  if (s.keys.size() > static_cast<size_t>(n_tokens / bs)) s.keys.resize(static_cast<size_t>(n_tokens / bs));
}

bool KvCacheManager::fork(SeqId parent, SeqId child, int64_t n_tokens) {
  const SeqKv& p = at(parent);
  const int bs = block_size();
  LADDER_CHECK(blocks_for(n_tokens, bs) <= static_cast<int64_t>(p.table.size()),
               "fork of positions the parent does not hold");
  const int64_t n_full = n_tokens / bs;
  const bool partial = n_tokens % bs != 0;
  if (partial && (pool_.n_free() < 1 || storage_->n_free_staging() < 1)) return false;
  SeqKv c;
  c.ns_digest = p.ns_digest;
  for (int64_t j = 0; j < n_full; ++j) {
    const BlockId b = p.table[static_cast<size_t>(j)];
    if (b != kNoBlock) pool_.ref(b);
    c.table.append(b);
  }
  c.gapped = p.gapped;
  c.attention.assign(p.attention.begin(),
                     p.attention.begin() + std::min<int64_t>(n_full, static_cast<int64_t>(p.attention.size())));
  if (partial) {
    auto b = pool_.allocate();
    LADDER_CHECK(b.has_value(), "the pool ran dry below its free count");
    storage_->stage(*b);
    const BlockId from = p.table[static_cast<size_t>(n_full)];
    storage_->copy_block(from, *b);
    // A partly filled copy of a block the parent has sealed and unstaged
    // takes its tokens from the sealed bytes.
    if (storage_->is_staged(*b) && !storage_->is_staged(from)) storage_->unseal(*b);
    c.table.append(*b);
  }
  c.staged_from = static_cast<size_t>(n_full);
  c.keys.assign(p.keys.begin(),
                p.keys.begin() + std::min<int64_t>(n_full, static_cast<int64_t>(p.keys.size())));
  c.n_published = std::min(p.n_published, n_full);
  auto [it, inserted] = seqs_.emplace(child, std::move(c));
  LADDER_CHECK(inserted, fmt::format("sequence {} is already in the KV cache", child));
  return true;
}

std::span<const BlockId> KvCacheManager::block_table(SeqId id) const {
  return at(id).table.blocks();
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats st;
  st.blocks_total = pool_.n_blocks();
  st.blocks_used = pool_.n_used();
  st.blocks_free = pool_.n_free();
  st.blocks_cached = pool_.n_cached_free();
  if (cache_ != nullptr) {
    st.prefix_queried_blocks = cache_->queried_blocks();
    st.prefix_hit_blocks = cache_->hit_blocks();
  }
  st.imported_blocks = imported_blocks_;
  st.refused_blocks = refused_blocks_;
  st.evicted_blocks = evicted_blocks_;
  if (host_ != nullptr) {
    st.host_offloaded_blocks = offloaded_blocks_;
    st.host_prefetched_blocks = prefetched_blocks_;
    st.host_prefetched_late_blocks = prefetched_late_blocks_;
    st.host_recomputed_blocks = recomputed_blocks_;
    st.host_dropped_blocks = host_->dropped_blocks();
    st.host_blocks = static_cast<int64_t>(host_->n_blocks());
    st.host_bytes_used = static_cast<int64_t>(host_->used_bytes());
    st.host_bytes_capacity = static_cast<int64_t>(host_->capacity_bytes());
  }
  return st;
}

}  // namespace ladder::kv
