// StopCriteria: when a sequence stops. Output is bounded by max_tokens and by
// the model's context; end-of-generation ids come from the caller (the
// tokenizer's EOS/EOT set), so the engine knows no vocabulary.
#pragma once

#include <cstdint>
#include <unordered_set>

namespace ladder::engine {

struct StopCriteria {
  int64_t max_tokens = 256;                    // output tokens, >= 1
  std::unordered_set<int32_t> stop_token_ids;  // the sampled stop id is part of the output
};

}  // namespace ladder::engine
