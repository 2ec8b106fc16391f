#include "server/reasoning_parser.h"

#include <algorithm>
#include <array>

namespace ladder::server {

std::optional<ReasoningMarkers> reasoning_markers_of_template(std::string_view source) {
  static const std::array<ReasoningMarkers, 4> kKnown = {{
      {"<seed:think>", "</seed:think>"},
      {"<think>", "</think>"},
      {"[THINK]", "[/THINK]"},
      {"<|START_THINKING|>", "<|END_THINKING|>"},
  }};
  for (const ReasoningMarkers& m : kKnown) {
    if (source.find(m.open) != std::string_view::npos && source.find(m.close) != std::string_view::npos) return m;
  }
  return std::nullopt;
}

ReasoningParser::ReasoningParser(ReasoningMarkers markers, bool starts_inside)
    : markers_(std::move(markers)), inside_(starts_inside) {}

namespace {

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningParser::Split ReasoningParser::feed(std::string_view text) {
  Split out;
  held_ += text;
  for (;;) {
    if (seen_close_) {
      out.content += held_;
      held_.clear();
      return out;
    }
    const std::string& marker = inside_ ? markers_.close : markers_.open;
    const size_t at = held_.find(marker);
    if (at != std::string::npos) {
      std::string before = held_.substr(0, at);
      held_.erase(0, at + marker.size());
      if (inside_) {
        out.reasoning += before;
        inside_ = false;
        seen_close_ = true;
        // The answer usually starts after a blank line; that is layout, not content.
        const size_t first = held_.find_first_not_of("\n");
        held_.erase(0, first == std::string::npos ? held_.size() : first);
      } else {
        // Only leading whitespace may come before the reasoning opens;
        // anything else means this output does not reason.
        if (before.find_first_not_of(" \n\t") != std::string::npos) {
          out.content += before + marker;
          seen_close_ = true;
          continue;
        }
        inside_ = true;
      }
      continue;
    }
    const size_t keep = partial_suffix(held_, marker);
    const std::string ready = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    if (inside_) {
      out.reasoning += ready;
    } else if (ready.find_first_not_of(" \n\t") != std::string::npos) {
      // Text before any open marker: an answer without reasoning.
      out.content += ready;
      seen_close_ = true;
    } else {
      held_ = ready + held_;  // leading whitespace waits for the marker
      if (held_.size() > marker.size() + 64) {
        out.content += held_;
        held_.clear();
        seen_close_ = true;
      }
    }
    return out;
  }
}

ReasoningParser::Split ReasoningParser::flush() {
  Split out;
  if (inside_ && !seen_close_) {
    out.reasoning = std::move(held_);
  } else {
    out.content = std::move(held_);
  }
  held_.clear();
  return out;
}

}  // namespace ladder::server
