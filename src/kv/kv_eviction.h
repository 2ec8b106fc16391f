// KV eviction: which of a sequence's blocks it keeps once its history
// outgrows a per-sequence token budget, so that it can keep generating in
// bounded memory (the approximate-KV rung; compare StreamingLLM).
//
// window: the sequence keeps its first sink blocks (the attention sinks) and
// its most recent blocks, budget_blocks in all; the blocks in between are
// freed back to the pool, their table entries becoming gaps (kNoBlock).
// snap: sinks, the most recent half (rounded up) of the rest of the budget,
// and in the other half the older blocks whose keys have received the most
// attention so far (H2O's heavy hitters, kept per block as SnapKV keeps
// clusters; the attention each block got is summed over every query, head
// and layer since the sequence's blocks were last allocated).
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

enum class EvictionKind { kNone, kWindow, kSnap };

struct EvictionPolicy {
  EvictionKind kind = EvictionKind::kNone;
  int64_t budget_tokens = 0;  // per sequence; used when kind != kNone
  int64_t sink_tokens = 4;

  bool enabled() const { return kind != EvictionKind::kNone; }
  int64_t sink_blocks(int block_size) const { return (sink_tokens + block_size - 1) / block_size; }
  int64_t budget_blocks(int block_size) const { return budget_tokens / block_size; }
  // Blocks kept because they are the most recent: the whole rest of the
  // budget under window, its larger half under snap.
  int64_t recent_blocks(int block_size) const {
    const int64_t rest = budget_blocks(block_size) - sink_blocks(block_size);
    return kind == EvictionKind::kSnap ? (rest + 1) / 2 : rest;
  }
};

// "none", "window", "snap".
std::string_view eviction_kind_name(EvictionKind kind);
std::optional<EvictionKind> eviction_kind_from_name(std::string_view name);

// kInvalidArgument for a negative sink count, or (when enabled) a budget
// that does not hold the sink blocks plus one block, named in tokens.
Status check_eviction_policy(const EvictionPolicy& policy, int block_size);

// Table indices of the blocks the policy frees from `table`, a sequence
// with n_computed positions written, in increasing order. Candidates are the
// live entries past the sink blocks and before the last recent_blocks()
// blocks holding written positions; window frees them all, snap keeps the
// budget's remaining blocks among them with the highest attention[i]
// (entries past its end count 0; ties keep the later block). Entries past
// the written positions (a chunk's blocks not yet computed) are always
// kept. Gaps are never listed.
std::vector<size_t> blocks_to_evict(std::span<const BlockId> table, int64_t n_computed,
                                    const EvictionPolicy& policy, int block_size,
                                    std::span<const float> attention = {});

}  // namespace ladder::kv
