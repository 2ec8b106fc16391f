// The host KV tier's payoff (kv/host_tier.h): a prefix-heavy workload -- F
// prompt families, each a shared prefix and a suffix that changes every
// round, replayed R rounds -- on a KV pool smaller than the families'
// prefixes, with and without the tier, on one engine configuration in one
// process (alternating runs, the best time of each kept), outputs compared
// token for token.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "common/tensor_type.h"
#include "engine/engine_metrics.h"
#include "model/llama_model.h"

namespace ladder::perf {

struct KvOffloadOptions {
  int64_t families = 8;
  int64_t rounds = 3;
  int64_t prefix_tokens = 256;  // shared by a family's requests
  int64_t suffix_tokens = 32;   // new in every round
  int64_t output_tokens = 16;
  int64_t concurrency = 1;      // requests in flight (a round is sent in groups of this many)
  int32_t kv_blocks = 0;        // the pool; 0: twice what `concurrency` requests take
  size_t host_bytes = size_t{256} << 20;
  TensorType kv_dtype = TensorType::kF16;
  int n_threads = 0;  // <= 0: all cores
  int repeats = 2;    // runs of each configuration, alternating
};

struct KvOffloadRun {
  double seconds = 0;  // the best of the repeats
  int64_t prompt_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t computed_tokens = 0;  // evaluated by the model: prefill (recompute included) and decode
  engine::KvHostMetrics host;
};

struct KvOffloadReport {
  int32_t kv_blocks = 0;
  int64_t prefix_blocks = 0;  // the families' prefixes, in blocks
  KvOffloadRun without;
  KvOffloadRun with;
  bool outputs_match = false;
};

// Errors: non-positive sizes, a request beyond the model's context or the
// pool, an engine that cannot be created.
Result<KvOffloadReport> measure_kv_offload(const model::LlamaModel& model, const KvOffloadOptions& options);

}  // namespace ladder::perf
