// FinishReason: why a sequence stopped producing tokens (OpenAI's
// finish_reason, plus the engine's own outcomes).
#pragma once

#include <string_view>

namespace ladder::engine {

enum class FinishReason {
  kNone,       // still running
  kStop,       // sampled an end-of-generation token id
  kLength,     // max_tokens reached, or the context is full
  kCancelled,  // the caller cancelled (client gone)
  kError,      // the engine could not serve it (see the final event's status)
};

// "stop", "length", "cancelled", "error", "none".
std::string_view finish_reason_name(FinishReason reason);

}  // namespace ladder::engine
