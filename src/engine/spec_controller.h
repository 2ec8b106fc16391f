// SpecController: decides, each step, whether speculation pays and with how
// many draft tokens -- from measurements, never assumptions (DESIGN.md rung
// 4: 3.36 tokens per cycle can still be slower).
//
// It keeps two measured costs (LinearCost), each linear in a size and in
// the attention work (the context the step's rows attend to):
//   forward(T, A)  a step's time without drafting (scheduling, the forward
//                  pass, sampling, streaming) for T batch tokens, fed by every decode
//                  step, plain or verifying (a prompt chunk is a different cost);
//   draft(m, A)    drafting time per proposed position for m drafting
//                  sequences (a cycle of k costs k * draft(m, A)).
// and each request's acceptance a (the chance that a draft token is
// accepted, given the previous one was), estimated from its own cycles with
// the global rate as a prior. With a cycle of k draft tokens a request
// emits E(a, k) = (1 - a^(k+1)) / (1 - a) tokens.
//
// plan() sorts the candidates by acceptance and picks the number m of them
// that speculate and the common k in [1, k_max] that maximise predicted
// tokens per second,
//   (sum over the m of E(a_i, k) + (B - m)) / (forward(B + others + m k, ..) + k draft(m, ..)),
// against plain decoding's B / forward(B + others, ..). Speculation turns off for
// a request when it is not among the m, and for the whole batch when m = 0.
// The prediction is checked against what happens: MeasuredGain compares
// the measured speed of speculative and plain decode steps taken in turn,
// and once it is known and below 1 speculation is off (overruled) however
// good the prediction looks; the re-probes below keep measuring it.
// Probes keep the measurements honest: until kWarmupCycles cycles are
// verified and both costs have data every candidate speculates with k_max; while every step had the same size,
// steps run plain (measuring the slope); every kPlainProbeEvery-th speculative step
// runs plain (measuring the plain step at this batch size); a request left
// off for kReprobeAfter steps speculates once more to refresh its acceptance.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/engine_metrics.h"

namespace ladder::engine {

// A measured cost y = c0 + c1 x1 + c2 x2 (x1: tokens in a step or
// sequences drafting; x2: attention work, thousands of attended positions)
// by exponentially decayed least squares, so the fit follows contexts that
// grow and loads that change. A coefficient the data would make negative is
// dropped (a step never gets cheaper for being larger), and once the fit
// has history an observation is clipped to kClip times its prediction: on
// a shared CPU one stalled step must not flip a decision.
class LinearCost {
 public:
  static constexpr double kDecay = 0.99;
  static constexpr double kClip = 3.0;

  void add(double x1, double x2, double y);
  bool empty() const { return n_ == 0; }
  // x1 has varied enough to measure its slope.
  bool has_slope() const;
  double at(double x1, double x2) const;

 private:
  void refit();
  int64_t n_ = 0;
  double w_ = 0;
  double s_[3] = {0, 0, 0};     // sums of the features [1, x1, x2]
  double ss_[3][3] = {};        // sums of their products
  double sy_[3] = {0, 0, 0};    // sums of feature * y
  double c_[3] = {0, 0, 0};     // the fit
};

// A request's acceptance: decayed counts of accepted draft tokens and of
// cycles that ended in a rejection (a truncated geometric's MLE).
struct AcceptanceEstimate {
  double accepted = 0;
  double rejections = 0;
  void add(int64_t n_accepted, bool rejected, double decay = 0.9);
  // With a prior (weight `prior_weight` cycles) at rate `prior`.
  double rate(double prior, double prior_weight = 2.0) const;
};

// An exponentially decayed mean (weight kDecay per newer sample) and the
// number of samples seen.
struct DecayedMean {
  static constexpr double kDecay = 0.95;
  double sum = 0, w = 0;
  double n = 0;  // samples seen (not decayed)
  void add(double x) {
    sum = sum * kDecay + x;
    w = w * kDecay + 1;
    n += 1;
  }
  double mean() const { return w > 0 ? sum / w : 0.0; }
};

// Measured speed of speculative decode steps against plain ones, both seen
// by the same engine in turn (plain probes between speculative steps,
// speculative re-probes between plain ones), so the two sides share the
// machine's state of the moment: a pair, interleaved. A step's speed is the
// tokens it emitted per decoding sequence per second, drafting included;
// only pure decode steps count (a prompt chunk in the step is a different
// cost). Exponentially decayed, so it follows a load that changes; and kept
// per batch size (spec_batch_bucket: 1, 2-3, 4-7, ...), since what speculation
// gains at batch 1 says nothing about batch 16, where a verify step's rows
// may be compute-bound.
class MeasuredGain {
 public:
  // Samples each side needs before the ratio is trusted.
  static constexpr double kMinPlain = 4;
  static constexpr double kMinSpec = 8;

  void add(bool speculative, int64_t n_sequences, int64_t n_emitted, double us);
  // Whether the gain at this batch size (decoding sequences) is known.
  bool known(int64_t n_sequences) const;
  // Speculative over plain tokens per second per sequence at this batch
  // size; 1 while unknown.
  double gain(int64_t n_sequences) const;

 private:
  DecayedMean plain_[kSpecBatchBuckets], spec_[kSpecBatchBuckets];  // by spec_batch_bucket
};

struct SpecCandidate {
  double acceptance = 0;   // estimated a
  int32_t k_cap = 0;       // most draft tokens it can use (>= 1)
  int64_t context = 0;     // its tokens so far
  int64_t steps_off = 0;   // consecutive plans that left it off
};

struct SpecPlan {
  int32_t k = 0;           // draft tokens per speculating candidate; 0: none
  std::vector<bool> on;    // per candidate
  // The best speculative choice's predicted tokens/s over plain decoding's
  // (below 1: speculation loses); 1 while nothing is measured.
  double predicted_gain = 1.0;
  // The measured ratio (MeasuredGain) when known, else 0; speculation is off
  // whenever it is known and below 1, whatever the prediction says.
  double measured_gain = 0;
  bool overruled = false;  // the prediction said on, the measurement said off
  bool probing = false;
};

class SpecController {
 public:
  static constexpr int kPlainProbeEvery = 32;
  // While the measured gain is unknown, plain probes come this often, so a
  // speculation that loses is measured, and switched off, within about
  // kWarmupCycles + kMinPlain * kEarlyPlainProbeEvery decode steps.
  static constexpr int kEarlyPlainProbeEvery = 8;
  static constexpr int kReprobeAfter = 64;
  // Speculation must be predicted this much faster to run (measurements on
  // a busy CPU wobble by a few percent; flapping costs probes).
  static constexpr double kMinGain = 1.05;
  // Cycles verified before the first decision (every candidate speculates
  // until then), and engine steps not measured at all (the first passes run
  // cold: page faults, thread start-up).
  static constexpr int64_t kWarmupCycles = 8;
  static constexpr int64_t kColdSteps = 2;

  // adaptive false: every candidate speculates with k_max, always.
  SpecController(int32_t k_max, bool adaptive);

  // candidates: decoding sequences that want speculation; n_others and
  // others_context: the other decoding sequences and their tokens.
  SpecPlan plan(std::span<const SpecCandidate> candidates, int64_t n_others, int64_t others_context);

  // A step of n_tokens whose rows attended attention_work positions in all.
  void observe_forward(int64_t n_tokens, int64_t attention_work, double us);
  // Drafting k tokens for n_sequences sequences of `context` tokens in all.
  void observe_draft(int64_t n_sequences, int64_t context, int32_t k, double us);
  // A pure decode step's outcome: whether any sequence verified a draft, the
  // decoding sequences, the tokens emitted, and its time with drafting.
  void observe_outcome(bool speculative, int64_t n_sequences, int64_t n_emitted, double us) {
    if (n_steps_ > kColdSteps) measured_.add(speculative, n_sequences, n_emitted, us);
  }
  void observe_cycle(int64_t n_accepted, bool rejected) {
    global_.add(n_accepted, rejected, 0.99);
    ++n_cycles_;
  }
  // The global acceptance, the prior of a new request.
  double global_acceptance() const { return global_.rate(0.5); }

  int32_t k_max() const { return k_max_; }
  // The last plan's predicted gain and whether it speculated at all.
  double last_gain() const { return last_gain_; }
  // The measured gain at the last plan's batch size when known, else 0.
  double measured_gain() const { return measured_gain_at(last_batch_); }
  // At a batch size (decoding sequences; spec_batch_bucket): the mean of the
  // recent predictions made there, and the measured gain; 0 while none.
  double predicted_gain_at(int64_t batch) const;
  double measured_gain_at(int64_t batch) const;
  bool last_enabled() const { return last_enabled_; }
  int32_t last_k() const { return last_k_; }

  // Expected tokens per cycle, E(a, k).
  static double expected_tokens(double a, int32_t k);

 private:
  int32_t k_max_;
  bool adaptive_;
  LinearCost forward_;
  LinearCost draft_;
  AcceptanceEstimate global_;
  MeasuredGain measured_;
  int64_t last_batch_ = 1;  // decoding sequences at the last plan
  DecayedMean predicted_[kSpecBatchBuckets];  // by spec_batch_bucket
  int64_t n_spec_plans_ = 0;
  int64_t n_cycles_ = 0;
  int64_t n_steps_ = 0;
  double last_gain_ = 1.0;
  bool last_enabled_ = true;
  int32_t last_k_ = 0;
};

}  // namespace ladder::engine
