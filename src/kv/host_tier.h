// HostTier: a bounded, least-recently-used store of the bytes of full,
// published KV blocks, keyed by their BlockKey, for blocks the pool had to
// give up (the offload tier of the approximate-KV rung; compare vLLM's CPU
// offloading and LMCache). A block comes back only to a sequence whose own
// chain key at that position equals the stored key, and the key covers the
// tenant cache scope, model, tokenizer and KV format (block_key.h), so a
// tenant can never be handed another tenant's block here either (DESIGN.md
// invariant 2).
//
// Bytes are kept exactly as the storage holds them (read_block's layout in
// kv_transfer.h: every layer's K block then V block), so a block that goes
// out and comes back is bit-identical and attention over it gives the same
// result as over the block that was never evicted. In a staged format (q4)
// only sealed bytes exist for a published block; its staging slot was given
// back before it could be evicted.
//
// Capacity is a whole number of blocks: floor(capacity_bytes / block_bytes)
// slots in one allocation made up front (its pages are touched only as slots
// fill). Storing into a full tier drops its least recently used block.
// Inclusive of the pool: a block copied back stays here, so the pool giving
// it up again costs no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"

namespace ladder::kv {

class HostTier {
 public:
  // block_bytes >= 1 and capacity_bytes >= block_bytes (checked: they come
  // from validated configuration).
  HostTier(size_t capacity_bytes, size_t block_bytes);
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  size_t block_bytes() const { return block_bytes_; }
  size_t max_blocks() const { return n_slots_; }
  size_t n_blocks() const { return map_.size(); }
  // Bytes of the slots: what the tier may hold, and holds now.
  size_t capacity_bytes() const { return n_slots_ * block_bytes_; }
  size_t used_bytes() const { return map_.size() * block_bytes_; }

  bool contains(const BlockKey& key) const { return map_.count(key) != 0; }
  // A slot for `key`, most recently used, for the caller to fill with the
  // block's bytes before anything else touches the tier; dropping the least
  // recently used block when the tier is full. Empty when the tier already
  // holds the key (it becomes most recently used, its bytes stay).
  std::span<uint8_t> insert(const BlockKey& key);
  // The bytes held under key, now most recently used; empty when not held.
  // Valid until the next insert().
  std::span<const uint8_t> find(const BlockKey& key);

  // Blocks dropped to make room since construction.
  int64_t dropped_blocks() const { return dropped_blocks_; }
  // Keys from least to most recently used (tests).
  std::vector<BlockKey> lru_order() const;

 private:
  struct Entry {
    size_t slot;
    std::list<BlockKey>::iterator lru;  // position in lru_
  };
  uint8_t* slot_data(size_t slot) const { return memory_.get() + slot * block_bytes_; }

  size_t block_bytes_;
  size_t n_slots_;
  std::unique_ptr<uint8_t[]> memory_;  // [n_slots][block_bytes]
  std::vector<size_t> free_slots_;     // a stack
  std::list<BlockKey> lru_;            // least recently used first
  std::unordered_map<BlockKey, Entry, BlockKeyHash> map_;
  int64_t dropped_blocks_ = 0;
};

}  // namespace ladder::kv
