// BlockTable: the blocks of one sequence in position order, appended as it
// grows and cut back only by truncation or release; entry i holds positions
// [i * block_size, (i+1) * block_size). Under KV eviction (kv_eviction.h)
// an entry may be a gap, kNoBlock: its positions were dropped, and the
// entries after it keep their indices, so every kept position stays where
// it was written.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "common/check.h"
#include "kv/block_pool.h"

namespace ladder::kv {

// A table entry whose block was evicted.
inline constexpr BlockId kNoBlock = -1;

class BlockTable {
 public:
  void append(BlockId id) { blocks_.push_back(id); }
  std::span<const BlockId> blocks() const { return blocks_; }
  size_t size() const { return blocks_.size(); }
  bool empty() const { return blocks_.empty(); }
  BlockId operator[](size_t i) const { return blocks_[i]; }
  // Positions the table can hold.
  int64_t capacity_tokens(int block_size) const { return static_cast<int64_t>(blocks_.size()) * block_size; }
  // Entries that hold a block (not gaps).
  size_t n_live() const {
    return static_cast<size_t>(
        std::count_if(blocks_.begin(), blocks_.end(), [](BlockId b) { return b != kNoBlock; }));
  }

  // Drops one reference on every block and empties the table (finish, cancel,
  // preemption).
  void release_all(BlockPool& pool) { truncate(0, pool); }
  // Keeps the first n entries, dropping one reference on each block of the
  // rest in position order (the order they join the free list).
  void truncate(size_t n, BlockPool& pool) {
    if (n >= blocks_.size()) return;
    for (size_t i = n; i < blocks_.size(); ++i) {
      if (blocks_[i] != kNoBlock) pool.release(blocks_[i]);
    }
    blocks_.resize(n);
  }
  // Drops the reference on entry i's block and leaves a gap there.
  void evict(size_t i, BlockPool& pool) {
    LADDER_CHECK(i < blocks_.size() && blocks_[i] != kNoBlock, "evict of a gap or past the table");
    pool.release(blocks_[i]);
    blocks_[i] = kNoBlock;
  }

 private:
  std::vector<BlockId> blocks_;
};

}  // namespace ladder::kv
