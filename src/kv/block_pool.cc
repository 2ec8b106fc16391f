#include "kv/block_pool.h"

#include <string>

#include "common/check.h"

namespace ladder::kv {

BlockPool::BlockPool(int32_t n_blocks, int block_size) : block_size_(block_size) {
  LADDER_CHECK(n_blocks >= 1, "a block pool needs at least one block");
  LADDER_CHECK(block_size >= 1, "block size must be positive");
  blocks_.resize(static_cast<size_t>(n_blocks));
  for (BlockId id = 0; id < n_blocks; ++id) push_back(clean_, id);
  n_clean_ = n_blocks;
}

void BlockPool::check_id(BlockId id) const {
  LADDER_CHECK(id >= 0 && id < n_blocks(), "block id out of range: " + std::to_string(id));
}

void BlockPool::push_back(List& list, BlockId id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  b.prev = list.tail;
  b.next = -1;
  if (list.tail >= 0) {
    blocks_[static_cast<size_t>(list.tail)].next = id;
  } else {
    list.head = id;
  }
  list.tail = id;
}

void BlockPool::unlink(List& list, BlockId id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.prev >= 0) {
    blocks_[static_cast<size_t>(b.prev)].next = b.next;
  } else {
    list.head = b.next;
  }
  if (b.next >= 0) {
    blocks_[static_cast<size_t>(b.next)].prev = b.prev;
  } else {
    list.tail = b.prev;
  }
  b.prev = b.next = -1;
}

BlockId BlockPool::pop_front(List& list) {
  const BlockId id = list.head;
  if (id >= 0) unlink(list, id);
  return id;
}

std::optional<BlockId> BlockPool::allocate() {
  BlockId id = pop_front(clean_);
  if (id >= 0) {
    --n_clean_;
  } else {
    id = pop_front(cached_);
    if (id < 0) return std::nullopt;
    --n_cached_free_;
    Block& b = blocks_[static_cast<size_t>(id)];
    b.in_cached_list = false;
    LADDER_CHECK(b.key.has_value(), "a block on the cached list has no key");
    const BlockKey evicted = *b.key;
    b.key.reset();
    if (on_evict_) on_evict_(id, evicted);
  }
  Block& b = blocks_[static_cast<size_t>(id)];
  LADDER_CHECK(b.ref_count == 0, "allocated a referenced block");
  b.ref_count = 1;
  return id;
}

void BlockPool::ref(BlockId id) {
  check_id(id);
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.ref_count == 0) {
    // Only cached blocks are worth reviving; a clean block has no content.
    LADDER_CHECK(b.in_cached_list, "ref() on a free block that holds no cached prefix");
    unlink(cached_, id);
    b.in_cached_list = false;
    --n_cached_free_;
  }
  ++b.ref_count;
}

void BlockPool::release(BlockId id) {
  check_id(id);
  Block& b = blocks_[static_cast<size_t>(id)];
  LADDER_CHECK(b.ref_count > 0, "release() of a free block " + std::to_string(id));
  if (--b.ref_count > 0) return;
  if (b.key.has_value()) {
    push_back(cached_, id);
    b.in_cached_list = true;
    ++n_cached_free_;
  } else {
    push_back(clean_, id);
    ++n_clean_;
  }
}

int32_t BlockPool::ref_count(BlockId id) const {
  check_id(id);
  return blocks_[static_cast<size_t>(id)].ref_count;
}

void BlockPool::set_key(BlockId id, const BlockKey& key) {
  check_id(id);
  Block& b = blocks_[static_cast<size_t>(id)];
  LADDER_CHECK(b.ref_count > 0, "set_key() on a free block");
  b.key = key;
}

const std::optional<BlockKey>& BlockPool::key(BlockId id) const {
  check_id(id);
  return blocks_[static_cast<size_t>(id)].key;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n_free()));
  for (BlockId id = clean_.head; id >= 0; id = blocks_[static_cast<size_t>(id)].next) out.push_back(id);
  for (BlockId id = cached_.head; id >= 0; id = blocks_[static_cast<size_t>(id)].next) out.push_back(id);
  return out;
}

}  // namespace ladder::kv
