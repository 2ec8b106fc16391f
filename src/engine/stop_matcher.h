// StopMatcher: finds stop strings in streamed text, across token boundaries,
// and keeps them out of the output (as OpenAI and vLLM do; include_stop keeps
// the stop string that ended it, vLLM's include_stop_str_in_output). Text that could
// still turn into a stop string is held back until the next piece decides it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ladder::engine {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops, bool include_stop = false);

  struct Step {
    std::string emit;     // safe to send now
    bool stopped = false; // a stop string completed; `emit` ends just before it (after it: include_stop)
  };
  // Feeds the next piece of detokenized (valid UTF-8) text.
  Step feed(std::string_view text);
  // At the end of generation: whatever was held back is output after all.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  bool include_stop_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace ladder::engine
