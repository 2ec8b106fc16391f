// One output position's log-probabilities as an OpenAI-compatible server
// reports them: the chosen token and its top-k alternatives, keyed by the
// token's text (the API names alternatives by text, not by id).
//
// Two wire forms are read:
//   completions  "logprobs": {"tokens": [..], "token_logprobs": [..],
//                             "top_logprobs": [{"piece": lp, ..}, ..], "text_offset": [..]}
//   chat         "logprobs": {"content": [{"token", "logprob", "bytes",
//                             "top_logprobs": [{"token", "logprob", "bytes"}, ..]}, ..]}
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ladder::harness {

// The number of alternatives per position a reference records and an
// approximate check compares.
inline constexpr int kReferenceTopK = 5;

struct TokenLogprob {
  std::string token;  // the chosen token's text
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // alternatives, most likely first
};

// Appends the positions of one "logprobs" object (either form) to out;
// anything that is not one of the two forms adds nothing.
void append_logprobs(const nlohmann::json& logprobs, std::vector<TokenLogprob>& out);

// Our own storage form: [{"token", "logprob", "top": [[text, logprob], ..]}, ..].
nlohmann::json logprobs_to_json(const std::vector<TokenLogprob>& positions);
std::vector<TokenLogprob> logprobs_from_json(const nlohmann::json& j);

}  // namespace ladder::harness
