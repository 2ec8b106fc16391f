// Helpers for the scheduler tests that check exact block ids: a KV cache of
// one layer, one head of dimension 1 and blocks of 4 tokens (its blocks are
// numbered from 0 in allocation order), and what a test asks of a request.
#pragma once

#include <memory>
#include <vector>

#include "engine/scheduler.h"
#include "kv/kv_test_support.h"

namespace ladder::engine::testing {

using Ids = std::vector<kv::BlockId>;

inline std::unique_ptr<kv::KvCacheManager> tiny_kv(int32_t n_blocks, bool prefix_caching,
                                                   const kv::EvictionPolicy& eviction = {}) {
  return kv::testing::arena_manager(
      {.n_layers = 1, .n_kv_heads = 1, .head_dim = 1, .block_size = 4, .n_blocks = n_blocks, .dtype = TensorType::kF32},
      prefix_caching, eviction);
}

// n token ids first, first + 1, ...
inline std::vector<int32_t> tokens(int n, int32_t first = 10) { return kv::testing::token_run(n, first); }

inline StopCriteria max_tokens(int64_t n) {
  StopCriteria s;
  s.max_tokens = n;
  return s;
}

// The request's block table; empty once it is gone.
inline Ids table(const Scheduler& s, RequestId id) {
  if (s.find(id) == nullptr) return {};
  auto b = s.block_table(id);
  return Ids(b.begin(), b.end());
}

}  // namespace ladder::engine::testing
