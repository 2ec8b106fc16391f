// Speculator: the engine's side of speculative decoding (rung 4). Before
// each schedule() it asks the SpecController which decoding sequences
// speculate and with how many tokens, has the Draft propose them and hands
// them to the scheduler (which fits them into the step's token budget and
// free blocks). After the forward pass, verify() turns each verified
// chunk's k+1 logit rows into the emitted tokens, and record() keeps the
// per-request and engine-wide figures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/draft.h"
#include "engine/engine_metrics.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/spec_controller.h"
#include "engine/spec_usage.h"
#include "ops/thread_pool.h"

namespace ladder::engine {

inline constexpr int32_t kMaxSpecK = 32;

struct SpeculativeConfig {
  // Null: no speculation. Used by the engine's loop thread only.
  std::shared_ptr<Draft> draft;
  int32_t k = 4;          // most draft tokens per cycle
  bool adaptive = true;   // false: always k for every request that wants it
};

// One request's speculative state, kept beside its sampler.
struct SpecState {
  bool wanted = false;  // the request asked for speculation and the engine has a draft
  AcceptanceEstimate acceptance;
  int64_t steps_off = 0;
  SpecUsage usage;
};

// Draws the target's tokens for one verified chunk: row i of `rows`
// ([draft.size() + 1][n_vocab]) holds the logits after draft[0, i). Samples
// row i with the output extended by draft[0, i); a draw equal to draft[i]
// accepts it and goes on, any other draw is the correction and ends the run;
// after a fully accepted draft the last row gives one more token. With the
// draft deterministic (q one-hot) this is exactly rejection sampling, and
// greedy requests get exactly their plain argmax tokens.
std::vector<SampledToken> sample_verified(Sampler& sampler, std::span<const float> rows, size_t n_vocab,
                                          std::span<const int32_t> prompt, std::span<const int32_t> output,
                                          std::span<const int32_t> draft);

class Speculator {
 public:
  explicit Speculator(SpeculativeConfig config);

  // Proposes drafts for the scheduler's decoding sequences. state(id) gives
  // a running request's SpecState. Returns the drafting time in µs.
  int64_t propose(Scheduler& scheduler, const std::function<SpecState&(RequestId)>& state,
                  ops::ThreadPool& pool);
  // After a step: its cost and, per verified chunk, the result.
  // A step's time without drafting; attention_work: positions its rows
  // attended, in all.
  void observe_step(int64_t n_tokens, int64_t attention_work, int64_t us) {
    controller_.observe_forward(n_tokens, attention_work, static_cast<double>(us));
  }
  // A pure decode step (no prompt chunk): whether it verified any draft, its
  // sequences, the tokens it emitted and its time with drafting.
  void observe_outcome(bool speculative, int64_t n_sequences, int64_t n_emitted, int64_t us) {
    controller_.observe_outcome(speculative, n_sequences, n_emitted, static_cast<double>(us));
  }
  void record_cycle(SpecState& s, int64_t n_draft, int64_t n_accepted, int64_t verify_us);
  // Once per step that verified at least one draft.
  void record_verify_step(int64_t us) { verify_us_ += us; }
  // Engine-wide counters into `m`.
  void publish(EngineMetrics& m) const;
  void release(RequestId id) { config_.draft->release(id); }

  const SpeculativeConfig& config() const { return config_; }

 private:
  SpeculativeConfig config_;
  SpecController controller_;
  int64_t proposed_ = 0, accepted_ = 0, cycles_ = 0, draft_us_ = 0, verify_us_ = 0;
};

}  // namespace ladder::engine
