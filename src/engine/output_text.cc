#include "engine/output_text.h"

namespace ladder::engine {

OutputText::OutputText(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops,
                       std::vector<int32_t> shown_special)
    : // The output continues the prompt, so its leading space is real text.
      detok_(tokenizer, /*skip_special=*/true, /*at_sequence_start=*/false),
      matcher_(std::move(stops)) {
  detok_.show_special(std::move(shown_special));
}

OutputText::Step OutputText::push(int32_t token) {
  Step s;
  if (matcher_.stopped()) return s;
  StopMatcher::Step step = matcher_.feed(detok_.push(token));
  s.text = std::move(step.emit);
  s.stopped = step.stopped;
  return s;
}

std::string OutputText::finish() {
  if (matcher_.stopped()) return {};
  StopMatcher::Step step = matcher_.feed(detok_.flush());
  if (step.stopped) return std::move(step.emit);
  return std::move(step.emit) + matcher_.flush();
}

}  // namespace ladder::engine
