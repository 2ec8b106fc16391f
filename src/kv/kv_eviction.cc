#include "kv/kv_eviction.h"

#include <fmt/format.h>

#include <algorithm>

#include "kv/block_table.h"

namespace ladder::kv {

std::string_view eviction_kind_name(EvictionKind kind) {
  switch (kind) {
    case EvictionKind::kNone: return "none";
    case EvictionKind::kWindow: return "window";
    case EvictionKind::kSnap: return "snap";
  }
  return "unknown";
}

std::optional<EvictionKind> eviction_kind_from_name(std::string_view name) {
  if (name == "none") return EvictionKind::kNone;
  if (name == "window") return EvictionKind::kWindow;
  if (name == "snap") return EvictionKind::kSnap;
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
                                    const EvictionPolicy& policy, int block_size,
                                    std::span<const float> attention) {
  std::vector<size_t> out;
  if (!policy.enabled()) return out;
  const int64_t written =
      std::min<int64_t>((n_computed + block_size - 1) / block_size, static_cast<int64_t>(table.size()));
  const int64_t sinks = policy.sink_blocks(block_size);
  const int64_t recent = policy.recent_blocks(block_size);
  for (int64_t i = sinks; i < written - recent; ++i) {
    if (table[static_cast<size_t>(i)] != kNoBlock) out.push_back(static_cast<size_t>(i));
  }
  const int64_t heavy = policy.budget_blocks(block_size) - sinks - recent;
  if (heavy <= 0 || out.empty()) return out;
  // Keep the `heavy` candidates with the most attention: order the
  // candidates by (attention, index) descending and spare the first ones.
  auto score = [&](size_t i) { return i < attention.size() ? attention[i] : 0.0f; };
  std::vector<size_t> ranked = out;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return score(a) != score(b) ? score(a) > score(b) : a > b; });
  ranked.resize(std::min(ranked.size(), static_cast<size_t>(heavy)));
  std::erase_if(out, [&](size_t i) { return std::find(ranked.begin(), ranked.end(), i) != ranked.end(); });
  return out;
}

}  // namespace ladder::kv
