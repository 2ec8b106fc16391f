// OutputText: one request's output tokens -> the text it releases. UTF-8
// safe (IncrementalDetokenizer holds partial characters) and stop strings
// matched across token boundaries and cut from the output (StopMatcher), so
// the engine stops a sequence on a stop string the moment it completes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/stop_criteria.h"

#include "engine/stop_matcher.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace ladder::engine {

struct OutputTextOptions {
  // Special tokens whose text is output (others write none), or all of them.
  std::vector<int32_t> shown_special;
  bool show_all_special = false;
};

class OutputText {
 public:
  // The stop strings and stop ids of `stop`: a stop id writes no text unless
  // stop.include_stop_text.
  OutputText(const tokenizer::Tokenizer& tokenizer, const StopCriteria& stop, OutputTextOptions options = {});

  struct Step {
    std::string text;      // valid UTF-8 released by this token, possibly empty
    bool stopped = false;  // a stop string completed; `text` ends just before it
  };
  // The next sampled token. After a stop, further tokens release nothing.
  Step push(int32_t token);
  // End of generation: the held-back text (an unfinished character becomes
  // U+FFFD, as the detokenizer does). Empty after a stop.
  std::string finish();

  bool stopped() const { return matcher_.stopped(); }

 private:
  tokenizer::IncrementalDetokenizer detok_;
  StopMatcher matcher_;
  std::unordered_set<int32_t> silent_;  // stop ids whose text is left out
};

}  // namespace ladder::engine
