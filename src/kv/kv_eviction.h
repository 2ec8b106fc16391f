// KV eviction: which of a sequence's blocks it keeps once its history
// outgrows a per-sequence token budget, so that it can keep generating in
// bounded memory (the approximate-KV rung; compare StreamingLLM).
//
// window: the sequence keeps its first sink blocks (the attention sinks) and
// its most recent blocks, budget_blocks in all; the blocks in between are
// freed back to the pool, their table entries becoming gaps (kNoBlock).
// Kept keys keep their original positions: a block table stays indexed by
// position / block_size, so a query at position p still sees each kept key
// at the position (and RoPE rotation) it was written with, and the causal
// structure follows positions, not table indices.
//
// Granularity is the block: sink_tokens rounds UP to whole blocks (4 sinks
// in 16-token blocks keep the first 16 tokens), budget_tokens rounds DOWN,
// and the budget must leave at least one recent block past the sinks.
// Eviction runs between steps, so a sequence holds at most budget_blocks
// blocks after each step, plus the blocks its next chunk writes during it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kv/block_pool.h"

namespace ladder::kv {

enum class EvictionKind { kNone, kWindow };

struct EvictionPolicy {
  EvictionKind kind = EvictionKind::kNone;
  int64_t budget_tokens = 0;  // per sequence; used when kind != kNone
  int64_t sink_tokens = 4;

  bool enabled() const { return kind != EvictionKind::kNone; }
  int64_t sink_blocks(int block_size) const { return (sink_tokens + block_size - 1) / block_size; }
  int64_t budget_blocks(int block_size) const { return budget_tokens / block_size; }
};

// "none", "window".
std::string_view eviction_kind_name(EvictionKind kind);
std::optional<EvictionKind> eviction_kind_from_name(std::string_view name);

// kInvalidArgument for a negative sink count, or (when enabled) a budget
// that does not hold the sink blocks plus one block, named in tokens.
Status check_eviction_policy(const EvictionPolicy& policy, int block_size);

// Table indices of the blocks the policy frees from `table`, a sequence
// with n_computed positions written: under window, every live entry past
// the sink blocks and before the last budget_blocks - sink_blocks blocks
// holding written positions. Entries past the written positions (a chunk's
// blocks not yet computed) are always kept. Gaps are never listed.
std::vector<size_t> blocks_to_evict(std::span<const BlockId> table, int64_t n_computed,
                                    const EvictionPolicy& policy, int block_size);

}  // namespace ladder::kv
