// ReasoningParser: splits a chat model's streamed output into reasoning text
// (between the template's thinking markers, e.g. <think> ... </think>) and the
// answer, as vLLM and llama.cpp's server return them (reasoning_content vs
// content). Markers may arrive split across tokens: text that could still
// become a marker is held back until the next piece decides it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ladder::server {

struct ReasoningMarkers {
  std::string open;   // e.g. "<think>"
  std::string close;  // e.g. "</think>"
};

// The thinking markers a chat template uses, when its source names one of the
// known pairs (<think>, <seed:think>, [THINK], <|START_THINKING|>).
std::optional<ReasoningMarkers> reasoning_markers_of_template(std::string_view template_source);

class ReasoningParser {
 public:
  // starts_inside: the prompt already opened the reasoning (the template's
  // generation prompt ends with the open marker), so output begins inside.
  ReasoningParser(ReasoningMarkers markers, bool starts_inside);

  struct Split {
    std::string reasoning;
    std::string content;
  };
  Split feed(std::string_view text);
  // End of output: whatever was held back, where it belongs.
  Split flush();

 private:
  ReasoningMarkers markers_;
  bool inside_;
  bool seen_close_ = false;  // reasoning happens once, at the start
  std::string held_;
};

}  // namespace ladder::server
