// Offline throughput of the engine: N requests submitted together
// (continuous batching) against the same N run one by one, on one engine in
// one process, so the ratio survives a noisy machine. Outputs of the two runs
// are compared token for token (batch invariance).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "engine/speculator.h"
#include "model/llama_model.h"

namespace ladder::perf {

struct OfflineOptions {
  int64_t requests = 64;
  int64_t prompt_tokens = 256;
  int64_t output_tokens = 128;
  bool sampled = false;  // temperature 0.8 + top-p 0.95 (seeded per request); else greedy
  int n_threads = 0;     // op thread pool; <= 0: all cores
  int64_t max_batch_tokens = 512;
  int32_t max_running = 256;
  TensorType kv_dtype = TensorType::kF16;
  engine::SpeculativeConfig speculative;  // no draft: plain decoding
};

struct OfflineThroughput {
  double one_by_one_s = 0;
  double together_s = 0;
  double one_by_one_tok_per_s = 0;  // output tokens per second
  double together_tok_per_s = 0;
  double speedup = 0;               // one_by_one_s / together_s
  double tokens_per_step = 0;       // mean tokens per forward pass, together
  double forward_share = 0;         // fraction of the together run spent in forward passes
  double sample_share = 0;          // ... and in sampling
  bool outputs_match = false;       // together == one by one, token for token
};

// Errors: prompt + output beyond the model's context, an engine that cannot
// be created.
Result<OfflineThroughput> measure_offline_throughput(const model::LlamaModel& model, const OfflineOptions& options);

}  // namespace ladder::perf
