#include "server/text_stream.h"

namespace ladder::server {

TextStream::TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops, bool want_logprobs)
    : tokenizer_(tokenizer),
      // The output continues the prompt, so its leading space is real text.
      detok_(tokenizer, /*skip_special=*/true, /*at_sequence_start=*/false),
      matcher_(std::move(stops)),
      want_logprobs_(want_logprobs) {}

TextDelta TextStream::push(const engine::SampledToken& token) {
  TextDelta d;
  if (matcher_.stopped()) return d;
  n_tokens_ += 1;
  ids_.push_back(token.token);
  if (want_logprobs_) {
    TokenLogprobEntry e;
    e.token = token.token;
    e.piece = std::string(tokenizer_.token_piece(token.token));
    e.logprob = token.logprob;
    for (const auto& t : token.top) e.top.emplace_back(std::string(tokenizer_.token_piece(t.token)), t.logprob);
    d.logprobs.push_back(std::move(e));
  }
  StopMatcher::Step step = matcher_.feed(detok_.push(token.token));
  d.text = std::move(step.emit);
  d.stopped = step.stopped;
  return d;
}

TextDelta TextStream::finish() {
  TextDelta d;
  if (matcher_.stopped()) return d;
  StopMatcher::Step step = matcher_.feed(detok_.flush());
  d.text = std::move(step.emit);
  d.stopped = step.stopped;
  if (!d.stopped) d.text += matcher_.flush();
  return d;
}

}  // namespace ladder::server
