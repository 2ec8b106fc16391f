// EngineMetrics: a snapshot of the engine loop's state, published after
// every step (the server's /metrics and the harness read it).
#pragma once

#include <array>
#include <cstdint>

namespace ladder::engine {

// Batch sizes (decoding sequences) in powers of two: 1, 2-3, 4-7, ...; the
// last bucket holds 2048 and more. Speculation's gain is kept per bucket.
inline constexpr int kSpecBatchBuckets = 12;
inline int spec_batch_bucket(int64_t n_sequences) {
  int b = 0;
  while (b + 1 < kSpecBatchBuckets && (int64_t{2} << b) <= n_sequences) ++b;
  return b;
}

// Speculative decoding, engine-wide (zero without a draft): draft tokens
// verified and accepted, verify cycles, time spent drafting and in forward
// passes that verified drafts; the last step's decision (on for any request,
// its k) and the controller's predicted and measured speed-up over plain
// decoding, at the last step and per batch size.
struct SpecMetrics {
  int64_t proposed = 0;
  int64_t accepted = 0;
  int64_t cycles = 0;
  int64_t draft_us = 0;
  int64_t verify_us = 0;
  bool enabled = false;
  int32_t k = 0;
  double predicted_gain = 1.0;
  double measured_gain = 0;  // speculative over plain decode steps, measured in turn; 0 until known
  // Per spec_batch_bucket: the recent predictions' mean and the measured
  // gain (0: none yet). The last step's figures describe whatever batch the
  // engine ended on (a run's tail: fewer sequences, k capped by max_tokens).
  std::array<double, kSpecBatchBuckets> predicted_by_batch{};
  std::array<double, kSpecBatchBuckets> measured_by_batch{};
};

// The host KV tier (kv/host_tier.h; zero without one): blocks copied out of
// the pool, copied back ahead of admission (prefetched) or by the admitting
// step itself (prefetched late), prompt blocks neither tier held
// (recomputed), blocks the tier dropped for room; what it holds now.
struct KvHostMetrics {
  int64_t offloaded_blocks = 0;
  int64_t prefetched_blocks = 0;
  int64_t prefetched_late_blocks = 0;
  int64_t recomputed_blocks = 0;
  int64_t dropped_blocks = 0;
  int64_t blocks = 0;
  int64_t bytes_used = 0;
  int64_t bytes_capacity = 0;
};

struct EngineMetrics {
  int64_t admission_queued = 0;  // waiting in admission for a running slot
  int64_t queue_depth = 0;       // admitted, not yet running (incl. preempted)
  int64_t running = 0;      // sequences holding KV
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;    // referenced by a sequence
  int64_t kv_blocks_free = 0;    // clean + cached-evictable
  int64_t kv_blocks_cached = 0;  // free blocks still holding a cached prefix
  // Tokens whose computation a prefix-cache hit skipped (re-admissions after
  // preemption included).
  int64_t prefix_hit_tokens = 0;
  // Rung 2: blocks taken from other workers' transfers, and blocks refused
  // because their key or format did not match the request's own.
  int64_t kv_imported_blocks = 0;
  int64_t kv_refused_blocks = 0;
  int64_t kv_evicted_blocks = 0;  // freed by the KV eviction policy
  KvHostMetrics kv_host;
  int64_t prompt_tokens = 0;    // prompt tokens admitted (hits included)
  int64_t computed_tokens = 0;  // tokens evaluated by the model (recompute included)
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t finished_requests = 0;
  // Time the loop spent in the model's forward pass and in sampling.
  int64_t forward_us = 0;
  int64_t sample_us = 0;
  // CPU time of the loop thread (steps, admission, everything it does); with
  // one op thread that is all of the engine's CPU.
  int64_t loop_cpu_us = 0;
  SpecMetrics spec;
};

}  // namespace ladder::engine
