#include "engine/stop_matcher.h"

#include <algorithm>

namespace ladder::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop) : include_stop_(include_stop) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Step StopMatcher::feed(std::string_view text) {
  Step step;
  if (stopped_) return step;
  held_.append(text);
  size_t first = std::string::npos;
  size_t first_len = 0;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    // The earliest stop; of two starting there, the one listed first.
    if (at < first) {
      first = at;
      first_len = s.size();
    }
  }
  if (first != std::string::npos) {
    step.emit = held_.substr(0, include_stop_ ? first + first_len : first);
    step.stopped = true;
    stopped_ = true;
    held_.clear();
    return step;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    size_t max_len = std::min(held_.size(), s.size() - 1);
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  step.emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  held_.clear();
  return out;
}

}  // namespace ladder::engine
