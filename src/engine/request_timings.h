// RequestTimings: when each stage of a request happened (server-side TTFT,
// ITL and E2E come from these; DESIGN.md "Metrics").
#pragma once

#include <chrono>
#include <optional>
#include <vector>

namespace ladder::engine {

using Clock = std::chrono::steady_clock;

struct RequestTimings {
  Clock::time_point arrival;                       // submit() returned
  std::optional<Clock::time_point> prefill_start;  // first step that computed its tokens
  std::optional<Clock::time_point> first_token;
  std::vector<Clock::time_point> token_times;  // one per output token, [n_output]
  std::optional<Clock::time_point> finished;
};

}  // namespace ladder::engine
