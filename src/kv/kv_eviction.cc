#include "kv/kv_eviction.h"

#include <fmt/format.h>

#include <algorithm>

#include "kv/block_table.h"

namespace ladder::kv {

std::string_view eviction_kind_name(EvictionKind kind) {
  switch (kind) {
    case EvictionKind::kNone: return "none";
    case EvictionKind::kWindow: return "window";
  }
  return "unknown";
}

std::optional<EvictionKind> eviction_kind_from_name(std::string_view name) {
  if (name == "none") return EvictionKind::kNone;
  if (name == "window") return EvictionKind::kWindow;
  return std::nullopt;
}

Status check_eviction_policy(const EvictionPolicy& policy, int block_size) {
  if (policy.sink_tokens < 0) {
    return invalid_argument(fmt::format("KV sink tokens must be >= 0, got {}", policy.sink_tokens));
  }
  if (!policy.enabled()) return Status::ok();
  const int64_t need = (policy.sink_blocks(block_size) + 1) * block_size;
  if (policy.budget_tokens < need) {
    return invalid_argument(fmt::format(
        "KV eviction budget {} tokens is too small: {} sink tokens take {} block(s) of {} tokens, and "
        "one more block is needed for recent tokens, so the budget must be >= {}",
        policy.budget_tokens, policy.sink_tokens, policy.sink_blocks(block_size), block_size, need));
  }
  return Status::ok();
}

std::vector<size_t> blocks_to_evict(std::span<const BlockId> table, int64_t n_computed,
                                    const EvictionPolicy& policy, int block_size) {
  std::vector<size_t> out;
  if (!policy.enabled()) return out;
  const int64_t written =
      std::min<int64_t>((n_computed + block_size - 1) / block_size, static_cast<int64_t>(table.size()));
  const int64_t sinks = policy.sink_blocks(block_size);
  const int64_t recent = policy.budget_blocks(block_size) - sinks;
  for (int64_t i = sinks; i < written - recent; ++i) {
    if (table[static_cast<size_t>(i)] != kNoBlock) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

}  // namespace ladder::kv
