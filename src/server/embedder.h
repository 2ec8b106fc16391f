// Embedder: /v1/embeddings for a causal model, as llama.cpp's server offers
// it: the input runs through the model once and the embedding is the mean
// over its tokens of the hidden state after the final norm (what the output
// head reads), scaled to unit length. Runs on the caller's thread with a
// private KV, beside the engine (the weights are shared and read-only).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/llama_model.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

class Embedder {
 public:
  Embedder(const model::LlamaModel& model, const tokenizer::Tokenizer& tokenizer, int64_t max_input_tokens);

  int64_t width() const { return model_.config().dim; }

  // The unit-length embedding of one tokenized input.
  Result<std::vector<float>> embed(std::span<const int32_t> tokens) const;

  // The whole response body for a parsed request, or the error to answer
  // with (an input over the token bound, a token outside the vocabulary, a
  // dimensions other than the width). *prompt_tokens: tokens embedded.
  Result<nlohmann::json> respond(const EmbeddingsRequest& request, const std::string& model_name,
                                 int64_t* prompt_tokens) const;

 private:
  const model::LlamaModel& model_;
  const tokenizer::Tokenizer& tokenizer_;
  int64_t max_input_tokens_;
};

}  // namespace ladder::server
