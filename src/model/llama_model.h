// LlamaModel: a Llama-family decoder (every architecture of model_config.h) whose weights are
// used in place from a mapped GGUF file.
#pragma once

#include <memory>
#include <span>

#include "common/status.h"
#include "gguf/gguf_file.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "ops/thread_pool.h"

namespace ladder::model {

class LlamaModel {
 public:
  // Binds the weights of `file`, which must outlive the model. Errors name the
  // missing tensor, the bad shape or the unsupported architecture.
  // serving_context: the context the model will be served with (0: its own
  // context_length); it picks LongRoPE's factors as llama.cpp does (the long
  // ones when it exceeds rope.scaling.original_context_length).
  static Result<std::unique_ptr<LlamaModel>> load(const gguf::GgufFile& file, int64_t serving_context = 0);
  ~LlamaModel();

  const ModelConfig& config() const { return config_; }
  // The serving_context it was loaded with (0: its own context): a model
  // loaded beside it (a draft) uses the same, so both pick the same RoPE factors.
  int64_t serving_context() const { return serving_context_; }
  // Bytes of weights read per decoded token (for bandwidth figures).
  uint64_t weight_bytes() const;

  // Evaluates the batch. logits receives n_vocab floats per requested row, in
  // batch order: one row for Logits::kLast, tokens.size() rows for kAll.
  // hidden receives dim floats per token of the kHidden sequences, in batch
  // order: the hidden state after the final norm (what the output head
  // reads). Errors: a position beyond the context or a block table too short.
  Status forward(std::span<const BatchSequence> batch, const KvBuffers& kv, std::span<float> logits,
                 ops::ThreadPool& pool, std::span<float> hidden = {}) const;
  // The same through the first n_layers layers only, then the output norm
  // and head (an early-exit draft); kv holds those n_layers layers.
  // Errors: as forward(), and n_layers outside [1, config().n_layers].
  Status forward_layers(std::span<const BatchSequence> batch, const KvBuffers& kv, std::span<float> logits,
                        ops::ThreadPool& pool, int64_t n_layers, std::span<float> hidden = {}) const;

  // How many logit rows forward() will write for this batch.
  static int64_t logit_rows(std::span<const BatchSequence> batch);

 private:
  struct Weights;
  explicit LlamaModel(ModelConfig config);
  ModelConfig config_;
  int64_t serving_context_ = 0;
  std::unique_ptr<Weights> weights_;
};

}  // namespace ladder::model
