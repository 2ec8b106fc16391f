// Helpers of the tests that drive a KvCacheManager (the kv suite, and the
// engine's eviction tests): a manager over an in-memory arena of a given
// shape, a sequence's block table, and prompts of consecutive token ids.
#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "common/check.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_eviction.h"
#include "kv/kv_storage.h"

namespace ladder::kv::testing {

inline std::unique_ptr<KvCacheManager> arena_manager(const KvShape& shape, bool prefix_caching = true,
                                                     const EvictionPolicy& eviction = {}) {
  auto storage = make_arena_storage(shape);
  LADDER_CHECK(storage.is_ok(), storage.status().to_string());
  return std::make_unique<KvCacheManager>(std::move(storage).value(), prefix_caching, eviction);
}

// The block ids of a sequence's table, as a vector (to compare with a literal).
inline std::vector<BlockId> table(const KvCacheManager& m, SeqId id) {
  const auto b = m.block_table(id);
  return std::vector<BlockId>(b.begin(), b.end());
}

// n token ids first, first + 1, ...
inline std::vector<int32_t> token_run(int n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

}  // namespace ladder::kv::testing
