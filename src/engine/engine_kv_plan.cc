// How an engine's KV storage is sized (declared beside EngineConfig in
// engine.h): the staging slots of a staged format and the whole shape, for
// the engine and for a model draft alike.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "engine/engine.h"
#include "ops/kv_codec.h"

namespace ladder::engine {

int32_t kv_staging_slots_for(const EngineConfig& config, size_t slot_bytes) {
  if (!ops::kv_dtype_staged(config.kv_dtype)) return 0;
  const SchedulerConfig& sc = config.scheduler;
  const int64_t bs = std::max(config.block_size, 1);
  // Every block a step can leave partly filled: the step's chunks span at
  // most max_batch_tokens / block_size blocks plus two partial ends per
  // sequence, and each sequence keeps one sealed block of slack
  // (kv_cache_manager.h).
  const int64_t all = sc.max_batch_tokens / bs + 3 * int64_t{sc.max_running} + 1;
  // One sequence's largest chunk must always find its slots, or it could
  // never run.
  const int64_t chunk = sc.max_chunk_tokens > 0 ? std::min(sc.max_chunk_tokens, sc.max_batch_tokens)
                                                : sc.max_batch_tokens;
  const int64_t floor = chunk / bs + 3;
  int64_t n = all;
  // Sized from a memory budget, the slots take at most an eighth of it;
  // beyond that a step waits for slots as it waits for blocks.
  if (config.n_kv_blocks <= 0 && slot_bytes > 0) {
    n = std::min<int64_t>(n, static_cast<int64_t>(config.kv_memory_bytes / 8 / slot_bytes));
  }
  n = std::max(n, floor);
  return static_cast<int32_t>(std::min<int64_t>(n, std::numeric_limits<int32_t>::max()));
}

Result<kv::KvShape> plan_kv_shape(int n_layers, int n_kv_heads, int head_dim, const EngineConfig& config) {
  kv::KvShape shape{.n_layers = n_layers,
                    .n_kv_heads = n_kv_heads,
                    .head_dim = head_dim,
                    .block_size = config.block_size,
                    .n_blocks = config.n_kv_blocks,
                    .dtype = config.kv_dtype};
  LADDER_ASSIGN_OR_RETURN(size_t slot_bytes, kv::kv_staging_bytes(shape));
  shape.n_staging = kv_staging_slots_for(config, slot_bytes);
  if (shape.n_blocks <= 0) {
    LADDER_ASSIGN_OR_RETURN(shape.n_blocks, kv::kv_blocks_that_fit(shape, config.kv_memory_bytes));
    if (shape.n_blocks < 1) {
      return invalid_argument(fmt::format("kv_memory_bytes {} holds not one KV block", config.kv_memory_bytes));
    }
  }
  return shape;
}

}  // namespace ladder::engine
