// Measurements of the forward pass alone (no scheduler, no sampling): decode
// at a batch size and prefill of one prompt, with the work each implies, so
// callers can state them as fractions of the machine's roofline.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_model.h"
#include "ops/thread_pool.h"

namespace ladder::perf {

struct ForwardMeasurement {
  double seconds = 0;         // wall time of the timed passes
  int64_t tokens = 0;         // tokens evaluated in them
  double tokens_per_s = 0;
  double weight_gb_per_s = 0; // weight bytes streamed per second (one read per pass)
  double gflop_per_s = 0;     // matmul + attention FLOPs per second
};

// `batch` sequences, each already holding `context` tokens of KV, decode
// `steps` tokens each, one forward pass per step. (Callers repeat it between
// bandwidth probes: ladder bench model pairs each run with a probe.)
ForwardMeasurement measure_decode(const model::LlamaModel& model, int batch, int64_t context, int steps,
                                  TensorType kv_dtype, ops::ThreadPool& pool);

// One prompt of `prompt_tokens` evaluated in one pass (best of `repeats`);
// `logits`, when given, receives the last token's logits.
ForwardMeasurement measure_prefill(const model::LlamaModel& model, int64_t prompt_tokens, int repeats,
                                   TensorType kv_dtype, ops::ThreadPool& pool, std::vector<float>* logits = nullptr);

// FLOPs of evaluating one token at position pos (matmuls and attention).
double flops_per_token(const model::ModelConfig& config, int64_t pos);

}  // namespace ladder::perf
