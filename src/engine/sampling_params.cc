#include "engine/sampling_params.h"

#include <fmt/format.h>

#include <cmath>

namespace ladder::engine {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f || temperature > 100.0f) {
    return invalid_argument(fmt::format("temperature must be in [0, 100], got {}", temperature));
  }
  if (top_k < 0) return invalid_argument(fmt::format("top_k must be >= 0, got {}", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f))
    return invalid_argument(fmt::format("top_p must be in (0, 1], got {}", top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    return invalid_argument(fmt::format("min_p must be in [0, 1], got {}", min_p));
  if (!(typical_p > 0.0f && typical_p <= 1.0f))
    return invalid_argument(fmt::format("typical_p must be in (0, 1], got {}", typical_p));
  if (min_tokens < 0) return invalid_argument(fmt::format("min_tokens must be >= 0, got {}", min_tokens));
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 100.0f)) {
    return invalid_argument(
        fmt::format("repetition_penalty must be in (0, 100], got {}", repetition_penalty));
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return invalid_argument(fmt::format("presence_penalty must be in [-2, 2], got {}", presence_penalty));
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return invalid_argument(fmt::format("frequency_penalty must be in [-2, 2], got {}", frequency_penalty));
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) return invalid_argument(fmt::format("logit_bias token id {} is negative", token));
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return invalid_argument(fmt::format("logit_bias for token {} must be in [-100, 100], got {}", token, bias));
    }
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return invalid_argument(
        fmt::format("top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs, top_logprobs));
  }
  return Status::ok();
}

}  // namespace ladder::engine
