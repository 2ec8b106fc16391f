// The paired speculation benchmark (`ladder bench spec`): the same requests
// through plain decoding and through speculative decoding, at several batch
// sizes, in one process, so the ratio survives a noisy machine. Reports
// acceptance, tokens per cycle and the speed-up, and checks that greedy
// outputs agree token for token (they must: speculation is exact). Each
// pair runs `repeats` times, plain and speculative interleaved, and each
// side keeps its fastest run (on a shared machine noise only adds time).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "engine/draft.h"
#include "model/llama_model.h"

namespace ladder::engine {

struct SpecBenchOptions {
  std::vector<int> batch_sizes = {1, 4, 16};
  std::vector<std::vector<int32_t>> prompts;  // cycled through; at least one
  int64_t output_tokens = 128;
  float temperature = 0.0f;  // > 0: seeded sampling (outputs then agree too: drafts are deterministic)
  int32_t k = 4;
  int repeats = 5;
  bool adaptive = false;  // false: speculation forced on (what it does); true: the engine may turn it off
  int n_threads = 0;
  TensorType kv_dtype = TensorType::kF16;
};

struct SpecBenchRow {
  int batch = 0;
  double plain_tok_per_s = 0;  // output tokens per second
  double spec_tok_per_s = 0;
  double speedup = 0;            // spec / plain
  // The same over the decode phase alone (from the moment every request has
  // its first token): what speculation changes, and what the engine's
  // prediction is about. 0 when a side emitted at most one token a request.
  double plain_decode_tok_per_s = 0;
  double spec_decode_tok_per_s = 0;
  double decode_speedup = 0;
  double acceptance = 0;         // accepted / proposed draft tokens
  double tokens_per_cycle = 0;
  double draft_share = 0;        // of the speculative run's time, drafting
  bool enabled_at_end = false;   // the engine's last decision (adaptive runs)
  // The engine's recent predictions and its measured spec/plain step speed
  // at this batch size (spec_batch_bucket; 0: none yet).
  double predicted_gain = 0;
  double measured_gain = 0;
  bool outputs_match = false;    // spec == plain, token for token
};

// What verifying k drafted tokens costs: a forward pass over k + 1 positions
// of one sequence against a one-position decode step, after `context`
// positions of KV (the fastest of `repeats` passes each). On a memory-bound
// model the ratio should stay near 1: the weights are read once per pass.
struct VerifyCost {
  int32_t k = 0;
  double step_us = 0;    // one position
  double verify_us = 0;  // k + 1 positions
  double ratio = 0;      // verify / step
};
Result<std::vector<VerifyCost>> measure_verify_cost(const model::LlamaModel& model, const std::vector<int32_t>& ks,
                                                    int64_t context, int repeats, int n_threads, TensorType kv_dtype);

// Errors: no prompts, a prompt + output beyond the context, an engine that
// cannot be created.
Result<std::vector<SpecBenchRow>> measure_speculation(const model::LlamaModel& model, std::shared_ptr<Draft> draft,
                                                      const SpecBenchOptions& options);

}  // namespace ladder::engine
