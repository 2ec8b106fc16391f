#include "engine/output_text.h"

namespace ladder::engine {

OutputText::OutputText(const tokenizer::Tokenizer& tokenizer, const StopCriteria& stop, OutputTextOptions options)
    : // The output continues the prompt, so its leading space is real text.
      detok_(tokenizer, /*skip_special=*/!options.show_all_special, /*at_sequence_start=*/false),
      matcher_(stop.stop_strings, stop.include_stop_text) {
  detok_.show_special(std::move(options.shown_special));
  if (!stop.include_stop_text) silent_ = stop.stop_token_ids;
}

OutputText::Step OutputText::push(int32_t token) {
  Step s;
  if (matcher_.stopped() || silent_.count(token) != 0) return s;
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
