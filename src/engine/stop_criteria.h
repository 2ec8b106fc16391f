// StopCriteria: when a sequence stops. Output is bounded by max_tokens and by
// the model's context; end-of-generation ids come from the caller (the
// tokenizer's EOS/EOT set); stop strings are matched on the detokenized
// output (they need the engine's tokenizer).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace ladder::engine {

inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 256;

struct StopCriteria {
  // Output tokens. 0 (at submit): as many as the engine's max_output_tokens
  // and the context allow; the scheduler always sees it resolved (>= 1).
  int64_t max_tokens = 0;
  // The sampled stop id is part of the output tokens; its text is not
  // (unless include_stop_text).
  std::unordered_set<int32_t> stop_token_ids;
  // The output ends just before the first of these to appear; it is not
  // part of the text, and the token that completed it is the last one counted.
  std::vector<std::string> stop_strings;
  // The stop string, or the text of the stop id, that ended the output is
  // part of the text (vLLM's include_stop_str_in_output). Default: left out.
  bool include_stop_text = false;
};

}  // namespace ladder::engine
