// Sequence: the scheduler's view of one request -- its tokens (prompt then
// output) and how many of them have KV written. Its blocks belong to the
// KvCacheManager; sampling state and streams belong to the engine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/request.h"
#include "engine/request_id.h"

namespace ladder::engine {

enum class SequenceState { kWaiting, kRunning };

struct Sequence {
  RequestId id = 0;
  SchedulingClass scheduling;
  StopCriteria stop;
  uint64_t arrival = 0;  // submission order, the last tie-breaker
  SequenceState state = SequenceState::kWaiting;

  std::vector<int32_t> tokens;  // [n_prompt + n_output]
  int64_t n_prompt = 0;
  // Tokens [0, n_computed) have their K and V written.
  int64_t n_computed = 0;
  // Speculative tokens proposed to follow `tokens` (engine/draft.h), verified
  // with the last token in the next step; cleared by update_from_output()
  // and by preemption. Never part of `tokens` until accepted.
  std::vector<int32_t> draft;

  int64_t prefix_hit_tokens = 0;  // on the first admission
  int32_t n_preemptions = 0;
  bool ever_scheduled = false;

  std::span<const int32_t> prompt() const { return std::span(tokens).first(static_cast<size_t>(n_prompt)); }
  std::span<const int32_t> output() const { return std::span(tokens).subspan(static_cast<size_t>(n_prompt)); }
  int64_t n_output() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }
  int64_t n_uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

// Scheduling order: higher priority, then earlier deadline, then earlier
// arrival. Returns true when a goes before b.
bool goes_before(const Sequence& a, const Sequence& b);

}  // namespace ladder::engine
