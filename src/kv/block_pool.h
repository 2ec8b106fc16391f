// BlockPool: the metadata of every KV block, allocated once up front. Blocks
// are ref-counted; a block whose count drops to zero goes on an
// eviction-ordered free list. Storage (the bytes) lives in KvStorage; ids are
// stable indices into it.
//
// Free-list order (what allocate() hands out first):
//   1. clean blocks (never used, or released without a cached prefix), FIFO;
//   2. cached blocks (refcount 0 but still holding a full prefix block that the
//      PrefixCache can hand back), least recently released first (LRU).
// Taking a cached block for new content evicts its prefix: the eviction
// listener (the PrefixCache) is told so it forgets the key.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kv/block_key.h"

namespace ladder::kv {

using BlockId = int32_t;
inline constexpr int kDefaultBlockSize = 16;

class BlockPool {
 public:
  // n_blocks >= 1, block_size >= 1 (checked: they come from validated config).
  BlockPool(int32_t n_blocks, int block_size = kDefaultBlockSize);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks with refcount 0 (clean + cached): what allocate() can still hand out.
  int32_t n_free() const { return n_clean_ + n_cached_free_; }
  int32_t n_used() const { return n_blocks() - n_free(); }
  // Free blocks that still hold a cached prefix (evictable).
  int32_t n_cached_free() const { return n_cached_free_; }

  // Takes the head of the free list with refcount 1, evicting its cached key
  // if it had one. nullopt when every block is referenced.
  std::optional<BlockId> allocate();
  // Adds a reference. A block at refcount 0 leaves the free list (a prefix
  // cache hit revives a cached block).
  void ref(BlockId id);
  // Drops a reference; at zero the block joins the free list: cached blocks at
  // the LRU tail, clean ones at the clean tail.
  void release(BlockId id);
  int32_t ref_count(BlockId id) const;

  // Prefix-cache bookkeeping: which key a block holds (a full block whose KV is
  // written). Set only while the block is referenced.
  void set_key(BlockId id, const BlockKey& key);
  const std::optional<BlockKey>& key(BlockId id) const;

  // Called with (block, key) when allocate() evicts a cached block.
  using EvictionListener = std::function<void(BlockId, const BlockKey&)>;
  void set_eviction_listener(EvictionListener listener) { on_evict_ = std::move(listener); }

  // The free list in allocation order (clean FIFO, then cached LRU). For
  // tests and debugging.
  std::vector<BlockId> free_list() const;

 private:
  // Doubly linked lists threaded through blocks_ (no allocation per op).
  struct List {
    BlockId head = -1;
    BlockId tail = -1;
  };
  struct Block {
    int32_t ref_count = 0;
    std::optional<BlockKey> key;
    BlockId prev = -1;
    BlockId next = -1;
    bool in_cached_list = false;
  };
  void check_id(BlockId id) const;
  void push_back(List& list, BlockId id);
  void unlink(List& list, BlockId id);
  BlockId pop_front(List& list);

  int block_size_;
  std::vector<Block> blocks_;  // [n_blocks]
  List clean_;
  List cached_;
  int32_t n_clean_ = 0;
  int32_t n_cached_free_ = 0;
  EvictionListener on_evict_;
};

}  // namespace ladder::kv
