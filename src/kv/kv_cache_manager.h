// KvCacheManager: the one thing the scheduler talks to about KV. It owns the
// block metadata (BlockPool), the prefix cache and the storage, and keeps
// each sequence's KV state: its block table, the hash chain of its full
// blocks and how many of them are published. Compare llama.cpp's memory
// interface and vLLM's KVCacheManager; this one does only what the
// scheduler needs:
//   add / remove a sequence;
//   acquire_prefix: take the cached blocks of a prompt's leading full blocks;
//   allocate: blocks so a sequence holds positions [0, n), all or nothing;
//   publish: offer the full blocks computed so far to the prefix cache;
//   release: drop a sequence's blocks (preemption), keeping its identity;
//   truncate: forget positions past n (rejected speculative tokens);
//   fork: a new sequence sharing another's blocks (n > 1 samples);
//   stage_import: blocks from another worker (rung 2), taken by the next
//     acquire_prefix where their keys match the sequence's own chain;
//   evict: under an eviction policy (kv_eviction.h), free the blocks a
//     sequence no longer keeps, leaving gaps in its table;
//   prefetch: with a host tier, copy a waiting sequence's offloaded blocks
//     back into the pool before the step that admits it;
//   capacity in blocks and tokens; the model's paged view of the storage.
//
// Staged formats (q4): every block a sequence allocates gets a staging slot
// for its F16 tokens; the slot goes back once the sequence has computed a
// whole further block past it (one block of slack, so a truncation of up to
// a block -- rejected speculative tokens -- finds its tokens still in F16).
// Cutting deeper refills the slot from the sealed bytes (lossy).
//
// Eviction: once a sequence has a gap, the KV it computes afterwards was
// attended over an incomplete history and differs from what the prefix
// cache's key promises, so the sequence publishes nothing more (its blocks
// published before the first gap stay valid; dropping its reference to one
// never changes the block's bytes).
//
// Host tier (host_tier.h, optional): a cached block the pool hands out for
// new content is copied to the host tier first (offloaded) instead of being
// dropped. acquire_prefix continues a prompt's chain past the pool's hits
// through the host tier and the pool in turn, copying each host-tier block
// into a free pool block published like a computed one; the first key
// neither holds ends the chain and prefill computes the rest (recomputed).
// prefetch does the same copies ahead of time for a request about to run,
// leaving the blocks cached and unreferenced in the pool, so that its
// admission finds them as ordinary prefix hits; blocks acquire_prefix must
// copy itself were prefetched late. Only published blocks reach the tier,
// so what a gapped sequence computed after its first gap and a sequence's
// unpublished tail (its last, partly filled block, e.g. a preempted
// sequence's) never do: they are recomputed.
//
// Invariants: a block is referenced once per sequence table holding it; a
// published block is full, written, computed over its whole prefix and never
// written again (truncate and fork copy rather than overwrite one); every
// block is free again once every sequence is removed or released.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/host_tier.h"
#include "kv/kv_eviction.h"
#include "kv/kv_storage.h"
#include "kv/kv_transfer.h"
#include "kv/prefix_cache.h"

namespace ladder::kv {

using SeqId = uint64_t;

struct KvCacheStats {
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;    // referenced by a sequence
  int32_t blocks_free = 0;    // clean + cached-evictable
  int32_t blocks_cached = 0;  // free blocks still holding a cached prefix
  int64_t prefix_queried_blocks = 0;
  int64_t prefix_hit_blocks = 0;
  int64_t imported_blocks = 0;  // staged blocks taken into the pool
  int64_t refused_blocks = 0;   // staged blocks whose key or format did not match
  int64_t evicted_blocks = 0;   // table entries freed by the eviction policy
  // Host tier (zero without one). Of the blocks an admission that ran
  // queried (acquire_prefix, then allocate): those it copied back from the
  // tier itself (prefetched late) and those no tier held (recomputed, a
  // first-time prompt's included); the rest were pool hits, prefetched ones
  // among them. Copies for an admission that did not run count as
  // prefetched (they wait in the pool for the next attempt).
  int64_t host_offloaded_blocks = 0;        // copied from the pool into the tier
  int64_t host_prefetched_blocks = 0;       // copied back ahead of the admitting step
  int64_t host_prefetched_late_blocks = 0;  // copied back by the admitting step, on the critical path
  int64_t host_recomputed_blocks = 0;
  int64_t host_dropped_blocks = 0;  // dropped by the tier to make room (LRU)
  int64_t host_blocks = 0;          // held now
  int64_t host_bytes_used = 0;
  int64_t host_bytes_capacity = 0;
};

class KvCacheManager {
 public:
  // The storage's shape fixes the block count and size. prefix_caching off:
  // acquire_prefix never hits and publish keeps nothing. eviction must pass
  // check_eviction_policy for the storage's block size (checked).
  // host_tier_bytes > 0: a host tier of that many bytes (at least one block,
  // and prefix caching on: checked; check_host_tier says so as a Status).
  KvCacheManager(std::unique_ptr<KvStorage> storage, bool prefix_caching, const EvictionPolicy& eviction = {},
                 size_t host_tier_bytes = 0);
  ~KvCacheManager();
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  // ns_digest: namespace_digest() of the tenant scope, model, tokenizer and
  // format; part of every key of this sequence's blocks.
  void add(SeqId id, const BlockKey& ns_digest);
  // Releases the sequence's blocks and forgets it.
  void remove(SeqId id);
  bool contains(SeqId id) const { return seqs_.count(id) != 0; }

  // For a sequence holding no blocks: references the cached blocks of the
  // longest leading run of tokens' full blocks, leaving at least the last
  // token to compute (its logits are needed). Returns the positions covered.
  int64_t acquire_prefix(SeqId id, std::span<const int32_t> tokens);
  // Blocks the sequence lacks to hold positions [0, n_tokens).
  int64_t blocks_needed(SeqId id, int64_t n_tokens) const;
  // Allocates them, all or nothing; false when the pool (or, in a staged
  // format, the staging slots) has too few free.
  bool allocate(SeqId id, int64_t n_tokens);
  // Publishes the full blocks of tokens[0, n_computed), whose KV is written,
  // and returns the staging slots of blocks sealed a block ago.
  void publish(SeqId id, std::span<const int32_t> tokens, int64_t n_computed);
  // Drops every block of the sequence (preemption); the chain keys stay, the
  // sequence stays known.
  void release(SeqId id);
  // Keeps positions [0, n_tokens) and frees the blocks wholly past them.
  // Positions past n_tokens in the last kept block will be written again, so
  // that block must not be published.
  void truncate(SeqId id, int64_t n_tokens);
  // A new sequence `child` holding parent's positions [0, n_tokens): full
  // blocks are shared (one more reference each), a partly filled last block
  // is copied into a block of its own. False when no block is free for it.
  bool fork(SeqId parent, SeqId child, int64_t n_tokens);
  // Offers a sequence blocks computed elsewhere. Its next acquire_prefix,
  // after the prefix cache's hits, copies each further staged block into a
  // free block (published like a computed one) while the staged key equals
  // the sequence's own key at that position and a block is free; the rest is
  // computed as usual. Staged blocks are used by that one acquire_prefix and
  // dropped by release and remove.
  void stage_import(SeqId id, std::shared_ptr<const KvBlockSet> blocks);
  // Applies the eviction policy to a sequence with n_computed positions
  // written (after publish): frees the blocks blocks_to_evict() lists and
  // returns how many. Nothing without a policy.
  int64_t evict(SeqId id, int64_t n_computed);
  // Host tier: for a request about to run (a waiting sequence, or one not
  // yet queued, named by its namespace digest), copies its leading full
  // blocks (leaving the last token, as acquire_prefix does) from the host
  // tier into free pool blocks where the chain has no pool block, and leaves
  // them published and unreferenced, with the chain's pool blocks before
  // them, as the most recently used cached blocks. Stops at the first key
  // neither the pool nor the tier holds, or once the chain holds max_blocks
  // free pool blocks. Returns how many it holds (found free or copied); 0
  // without a host tier.
  int64_t prefetch(const BlockKey& ns_digest, std::span<const int32_t> tokens, int64_t max_blocks);
  int64_t prefetch(SeqId id, std::span<const int32_t> tokens, int64_t max_blocks);
  // The same for a chain of keys made by prefetch_keys (a caller that
  // prefetches one request step after step hashes its prompt once).
  int64_t prefetch_chain(std::span<const BlockKey> keys, int64_t max_blocks);
  // The keys prefetch looks up for a prompt: its leading full blocks, less
  // the last token.
  std::vector<BlockKey> prefetch_keys(const BlockKey& ns_digest, std::span<const int32_t> tokens) const;
  bool has_host_tier() const { return host_ != nullptr; }
  const HostTier* host_tier() const { return host_.get(); }
  // Snap eviction's evidence: adds mass[i] (the attention the keys of table
  // entry i received in a step, model::BatchSequence::key_mass) to what the
  // sequence's entries have received since its blocks were allocated.
  void add_attention(SeqId id, std::span<const float> mass);
  std::span<const float> attention(SeqId id) const { return at(id).attention; }
  // Blocks a sequence holds (its table less its gaps).
  int64_t live_blocks(SeqId id) const { return static_cast<int64_t>(at(id).table.n_live()); }
  const EvictionPolicy& eviction() const { return eviction_; }

  std::span<const BlockId> block_table(SeqId id) const;

  int block_size() const { return pool_.block_size(); }
  int32_t n_blocks() const { return pool_.n_blocks(); }
  int32_t n_free_blocks() const { return pool_.n_free(); }
  int64_t capacity_tokens() const { return int64_t{n_blocks()} * block_size(); }
  int64_t free_tokens() const { return int64_t{n_free_blocks()} * block_size(); }
  KvCacheStats stats() const;

  const ops::PagedKv& layers() const { return storage_->layers(); }
  const KvStorage& storage() const { return *storage_; }
  std::string format_name() const { return storage_->format_name(); }
  // The pool, read-only (tests check exact block ids and ref counts).
  const BlockPool& pool() const { return pool_; }

 private:
  struct SeqKv {
    BlockKey ns_digest;
    BlockTable table;
    // Keys of the sequence's full blocks computed so far (kept across
    // preemption: its tokens do not change), and how many of the table's
    // blocks are published (hit blocks count as published).
    std::vector<BlockKey> keys;
    int64_t n_published = 0;
    // Table entries [staged_from, size) hold staging slots of this sequence.
    size_t staged_from = 0;
    std::shared_ptr<const KvBlockSet> staged;
    // The table has (or had, since its blocks were last released) a gap:
    // nothing more is published.
    bool gapped = false;
    // Per table entry: attention received (snap eviction); may be shorter
    // than the table.
    std::vector<float> attention;
    // Host tier: what the last acquire_prefix copied back and left to
    // compute, counted once the sequence runs (its next allocate); a
    // sequence released before that leaves its copies in the pool as a
    // prefetch.
    int64_t pending_late = 0;
    int64_t pending_recomputed = 0;
  };
  // Counts a sequence's pending host-tier figures: as an admission that ran,
  // or (ran false) as a prefetch for the attempt that will.
  void settle_host_counts(SeqKv& s, bool ran);
  // Returns the staging slots of table entries [from, size) that s holds.
  void unstage_from(SeqKv& s, size_t from);
  SeqKv& at(SeqId id);
  const SeqKv& at(SeqId id) const;
  // acquire_prefix's import of s.staged past its hits, up to max_blocks.
  void adopt_staged(SeqKv& s, const KvBlockSet& staged, size_t max_blocks);
  // Host tier (kv_cache_manager_host.cc). The pool is taking `block` for new
  // content: its bytes go to the tier.
  void offload(BlockId block, const BlockKey& key);
  // The tier's block `key` copied into a free pool block published under
  // key, referenced once; nullopt when the tier does not hold it (or lost it
  // to the pool's own eviction on the way) or no block is free.
  std::optional<BlockId> restore(const BlockKey& key);
  // acquire_prefix past the pool's hits: host-tier blocks and pool hits in
  // turn, up to max_blocks. Returns the blocks copied.
  int64_t continue_from_host(SeqKv& s, size_t max_blocks);

  std::unique_ptr<KvStorage> storage_;
  BlockPool pool_;
  std::unique_ptr<HostTier> host_;      // null: no host tier (outlives cache_'s observer)
  std::unique_ptr<PrefixCache> cache_;  // null: prefix caching off
  EvictionPolicy eviction_;
  std::unordered_map<SeqId, SeqKv> seqs_;
  int64_t imported_blocks_ = 0;
  int64_t refused_blocks_ = 0;
  int64_t evicted_blocks_ = 0;
  int64_t offloaded_blocks_ = 0;
  int64_t prefetched_blocks_ = 0;
  int64_t prefetched_late_blocks_ = 0;
  int64_t recomputed_blocks_ = 0;
};

// Whether a host tier of host_tier_bytes fits next to a pool of this shape:
// kInvalidArgument when it holds not one block, or prefix caching is off
// (only published blocks go to the tier).
Status check_host_tier(size_t host_tier_bytes, const KvShape& shape, bool prefix_caching);

}  // namespace ladder::kv
