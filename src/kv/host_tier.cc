#include "kv/host_tier.h"

#include "common/check.h"

namespace ladder::kv {

HostTier::HostTier(size_t capacity_bytes, size_t block_bytes)
    : block_bytes_(block_bytes), n_slots_(block_bytes == 0 ? 0 : capacity_bytes / block_bytes) {
  LADDER_CHECK(block_bytes >= 1, "a host tier block has at least one byte");
  LADDER_CHECK(n_slots_ >= 1, "a host tier holds at least one block");
  // Default-initialized: the pages are touched only as slots fill.
  memory_.reset(new uint8_t[n_slots_ * block_bytes_]);
  free_slots_.reserve(n_slots_);
  for (size_t i = n_slots_; i > 0; --i) free_slots_.push_back(i - 1);
}

std::span<uint8_t> HostTier::insert(const BlockKey& key) {
  if (auto it = map_.find(key); it != map_.end()) {
    lru_.splice(lru_.end(), lru_, it->second.lru);
    return {};
  }
  if (free_slots_.empty()) {
    auto oldest = map_.find(lru_.front());
    LADDER_CHECK(oldest != map_.end(), "the host tier's LRU list names a block it does not hold");
    free_slots_.push_back(oldest->second.slot);
    map_.erase(oldest);
    lru_.pop_front();
    ++dropped_blocks_;
  }
  const size_t slot = free_slots_.back();
  free_slots_.pop_back();
  lru_.push_back(key);
  map_.emplace(key, Entry{slot, std::prev(lru_.end())});
  return {slot_data(slot), block_bytes_};
}

std::span<const uint8_t> HostTier::find(const BlockKey& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return {};
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return {slot_data(it->second.slot), block_bytes_};
}

std::vector<BlockKey> HostTier::lru_order() const { return {lru_.begin(), lru_.end()}; }

}  // namespace ladder::kv
