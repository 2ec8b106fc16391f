// TextStream: one request's output tokens -> the text a client sees. UTF-8
// safe (IncrementalDetokenizer holds partial characters), stop strings matched
// across token boundaries and cut from the output (StopMatcher), and the
// per-token logprobs the response carries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "server/stop_matcher.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

struct TokenLogprobEntry {
  int32_t token = 0;
  std::string piece;  // the token's bytes (may be part of a character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // [top_logprobs] (piece, logprob)
};

struct TextDelta {
  std::string text;                         // valid UTF-8, possibly empty
  std::vector<TokenLogprobEntry> logprobs;  // one per token consumed, when wanted
  bool stopped = false;                     // a stop string ended the output
};

class TextStream {
 public:
  TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops, bool want_logprobs);

  // The next sampled token. After a stop, further tokens are ignored.
  TextDelta push(const engine::SampledToken& token);
  // End of generation: the held-back text (an unfinished character becomes
  // U+FFFD, as the detokenizer does).
  TextDelta finish();

  bool stopped() const { return matcher_.stopped(); }
  // Tokens consumed up to and including the one that completed a stop string.
  int64_t n_tokens() const { return n_tokens_; }
  const std::vector<int32_t>& token_ids() const { return ids_; }

 private:
  const tokenizer::Tokenizer& tokenizer_;
  tokenizer::IncrementalDetokenizer detok_;
  StopMatcher matcher_;
  bool want_logprobs_;
  int64_t n_tokens_ = 0;
  std::vector<int32_t> ids_;
};

}  // namespace ladder::server
