// StopMatcher: finds stop strings in streamed text, across token boundaries,
// and keeps them out of the output (as OpenAI and vLLM do). Text that could
// still turn into a stop string is held back until the next piece decides it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ladder::engine {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Step {
    std::string emit;     // safe to send now
    bool stopped = false; // a stop string completed; `emit` ends just before it
  };
  // Feeds the next piece of detokenized (valid UTF-8) text.
  Step feed(std::string_view text);
  // At the end of generation: whatever was held back is output after all.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace ladder::engine
