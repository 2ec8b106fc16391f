// BlockTable: the blocks of one sequence in position order, appended as it
// grows and cut back only by truncation or release; block i holds positions
// [i * block_size, (i+1) * block_size).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_pool.h"

namespace ladder::kv {

class BlockTable {
 public:
  void append(BlockId id) { blocks_.push_back(id); }
  std::span<const BlockId> blocks() const { return blocks_; }
  size_t size() const { return blocks_.size(); }
  bool empty() const { return blocks_.empty(); }
  BlockId operator[](size_t i) const { return blocks_[i]; }
  // Positions the table can hold.
  int64_t capacity_tokens(int block_size) const { return static_cast<int64_t>(blocks_.size()) * block_size; }

  // Drops one reference on every block and empties the table (finish, cancel,
  // preemption).
  void release_all(BlockPool& pool) { truncate(0, pool); }
  // Keeps the first n blocks, dropping one reference on each of the rest in
  // position order (the order they join the free list).
  void truncate(size_t n, BlockPool& pool) {
    if (n >= blocks_.size()) return;
    for (size_t i = n; i < blocks_.size(); ++i) pool.release(blocks_[i]);
    blocks_.resize(n);
  }

 private:
  std::vector<BlockId> blocks_;
};

}  // namespace ladder::kv
