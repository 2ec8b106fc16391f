// Sizing long prompts in a served model's own tokens, over HTTP only, so
// that `ladder workload long-context|rare --fill F --endpoint URL` fills the
// stated fraction of any model's context whatever its vocabulary: the
// context length comes from /v1/models (max_model_len), and the characters
// per token from the server's count of a probe prompt (usage.prompt_tokens of
// a one-token completion). Generation is repeated with the corrected ratio
// until the first prompt measures within 3% of its target.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/generators.h"
#include "net/http_client.h"

namespace ladder::harness {

// usage.prompt_tokens of `prompt` sent to /v1/completions with max_tokens 1.
Result<int64_t> count_prompt_tokens(const net::Endpoint& ep, const std::string& api_key, const std::string& model,
                                    const std::string& prompt);

struct ContextFit {
  int64_t target_tokens = 0;  // per prompt
  int64_t min_tokens = 0;     // what the server counted, over every prompt
  int64_t max_tokens = 0;
  double mean_tokens = 0;
  double chars_per_token = 0;  // the ratio the workload was generated with
  int rounds = 0;              // generations
  int counted = 0;             // prompts the server counted (the probe included)
};

// Generates o with prompts fitted to `count` (a served tokenizer), starting
// from chars_per_token; `corpus` is the prose the synthesizer draws from.
Result<std::vector<WorkloadRequest>> generate_fitted(const GeneratorOptions& o, const std::string& corpus,
                                                     double chars_per_token,
                                                     const std::function<Result<int64_t>(const std::string&)>& count,
                                                     ContextFit* fit);

}  // namespace ladder::harness
