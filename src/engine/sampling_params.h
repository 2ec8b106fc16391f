// SamplingParams: how the next token is chosen from the logits. Defaults are
// OpenAI's: temperature 1, no truncation, no penalties.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ladder::engine {

inline constexpr int kMaxTopLogprobs = 20;

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax; ties go to the lower id)
  int32_t top_k = 0;         // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;        // keep the smallest most-likely set with mass >= top_p
  float min_p = 0.0f;        // drop tokens with p < min_p * p_max
  // Locally typical sampling (Meister et al.): keep the tokens whose
  // surprisal is closest to the distribution's entropy, up to this mass.
  // 1 = off.
  float typical_p = 1.0f;
  // HF/llama.cpp style: a logit of a token seen in prompt or output is divided
  // by the penalty when positive, multiplied when negative. 1 = off.
  float repetition_penalty = 1.0f;
  // OpenAI style, over output tokens only: logit -= presence * [count > 0] +
  // frequency * count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // OpenAI logit_bias: (token id, bias added to its logit), applied with the
  // penalties; -100 bans a token, +100 all but forces it.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Until the output has min_tokens tokens, these ids (the request's stop
  // ids) cannot be sampled (vLLM's min_tokens).
  int64_t min_tokens = 0;
  std::vector<int32_t> banned_before_min;
  // Seeds this request's own RNG; the engine draws one when absent.
  std::optional<uint64_t> seed;
  // How many top alternatives to report with each token (0..kMaxTopLogprobs).
  int32_t top_logprobs = 0;

  bool greedy() const { return temperature == 0.0f || top_k == 1; }
  // kInvalidArgument naming the field that is out of its range.
  Status validate() const;
};

}  // namespace ladder::engine
