// PromptScorer: the logprob of every prompt token given the tokens before it
// (vLLM's prompt_logprobs, completions' echo with logprobs). Runs the model
// over the prompt once, on the caller's thread with a private f32 KV beside
// the engine (the weights are shared and read-only), as Embedder does; the
// logprobs are the model's own, whatever KV format the engine serves with.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "engine/sampler.h"
#include "model/llama_model.h"

namespace ladder::server {

struct PromptTokenScore {
  int32_t token = 0;
  // False for the first token, which nothing predicts (logprob, rank and
  // top are then empty).
  bool scored = false;
  float logprob = 0.0f;
  int64_t rank = 0;  // 1 = the model's most likely token at that position
  std::vector<engine::TokenLogprob> top;  // most likely first, ties to the lower id
};

class PromptScorer {
 public:
  explicit PromptScorer(const model::LlamaModel& model);

  // One score per token; `top` alternatives at each position (0..20).
  Result<std::vector<PromptTokenScore>> score(std::span<const int32_t> tokens, int32_t top) const;

 private:
  const model::LlamaModel& model_;
};

}  // namespace ladder::server
