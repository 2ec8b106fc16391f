#include "engine/spec_controller.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"

namespace ladder::engine {

void LinearCost::add(double x1, double x2, double y) {
  if (n_ >= 8) y = std::min(y, kClip * std::max(1.0, at(x1, x2)));
  ++n_;
  const double f[3] = {1, x1, x2};
  w_ = w_ * kDecay + 1;
  for (int i = 0; i < 3; ++i) {
    s_[i] = s_[i] * kDecay + f[i];
    sy_[i] = sy_[i] * kDecay + f[i] * y;
    for (int j = 0; j < 3; ++j) ss_[i][j] = ss_[i][j] * kDecay + f[i] * f[j];
  }
  refit();
}

bool LinearCost::has_slope() const {
  if (w_ == 0) return false;
  const double mean = s_[1] / w_;
  return ss_[1][1] / w_ - mean * mean > 1e-3;  // more than one size seen, not long ago
}

void LinearCost::refit() {
  // Least squares over the features in `use`, by Gaussian elimination on the
  // normal equations (a tiny ridge keeps them solvable); drops a feature
  // whose coefficient comes out negative and tries again.
  bool use[3] = {true, true, true};
  for (int attempt = 0; attempt < 3; ++attempt) {
    int idx[3];
    int n = 0;
    for (int i = 0; i < 3; ++i) {
      if (use[i]) idx[n++] = i;
    }
    double a[3][4] = {};
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < n; ++c) a[r][c] = ss_[idx[r]][idx[c]] + (r == c && r > 0 ? 1e-6 * w_ : 0);
      a[r][n] = sy_[idx[r]];
    }
    bool singular = false;
    for (int col = 0; col < n && !singular; ++col) {
      int pivot = col;
      for (int r = col + 1; r < n; ++r) {
        if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
      }
      if (std::abs(a[pivot][col]) < 1e-12) {
        singular = true;
        break;
      }
      for (int c = 0; c <= n; ++c) std::swap(a[col][c], a[pivot][c]);
      for (int r = 0; r < n; ++r) {
        if (r == col) continue;
        const double f = a[r][col] / a[col][col];
        for (int c = col; c <= n; ++c) a[r][c] -= f * a[col][c];
      }
    }
    double c[3] = {0, 0, 0};
    if (!singular) {
      for (int r = 0; r < n; ++r) c[idx[r]] = a[r][n] / a[r][r];
    }
    int negative = -1;
    for (int i = 1; i < 3; ++i) {
      if (use[i] && c[i] < 0) negative = i;
    }
    if (singular || negative > 0) {
      if (negative < 0) negative = use[2] ? 2 : 1;  // singular: the attention term first
      use[negative] = false;
      if (!use[1] && !use[2]) {
        c_[0] = sy_[0] / w_;
        c_[1] = c_[2] = 0;
        return;
      }
      continue;
    }
    std::copy(c, c + 3, c_);
    return;
  }
  c_[0] = sy_[0] / w_;
  c_[1] = c_[2] = 0;
}

double LinearCost::at(double x1, double x2) const { return std::max(0.0, c_[0] + c_[1] * x1 + c_[2] * x2); }

void AcceptanceEstimate::add(int64_t n_accepted, bool rejected, double decay) {
  accepted = accepted * decay + static_cast<double>(n_accepted);
  rejections = rejections * decay + (rejected ? 1.0 : 0.0);
}

double AcceptanceEstimate::rate(double prior, double prior_weight) const {
  // prior_weight cycles at the prior rate, each of 1/(1-a) tokens on average.
  const double pa = prior_weight * prior / std::max(1e-6, 1 - prior);
  return (accepted + pa) / (accepted + rejections + pa + prior_weight);
}

void MeasuredGain::add(bool speculative, int64_t n_sequences, int64_t n_emitted, double us) {
  if (n_sequences < 1 || n_emitted < 1 || !(us > 0)) return;
  const double rate = static_cast<double>(n_emitted) / static_cast<double>(n_sequences) / us;
  (speculative ? spec_ : plain_)[spec_batch_bucket(n_sequences)].add(rate);
}

bool MeasuredGain::known(int64_t n_sequences) const {
  const int b = spec_batch_bucket(n_sequences);
  return plain_[b].n >= kMinPlain && spec_[b].n >= kMinSpec;
}

double MeasuredGain::gain(int64_t n_sequences) const {
  const int b = spec_batch_bucket(n_sequences);
  if (!known(n_sequences) || plain_[b].sum <= 0) return 1.0;
  return spec_[b].mean() / plain_[b].mean();
}

double SpecController::predicted_gain_at(int64_t batch) const {
  return predicted_[spec_batch_bucket(batch)].mean();
}

double SpecController::measured_gain_at(int64_t batch) const {
  return measured_.known(batch) ? measured_.gain(batch) : 0.0;
}

SpecController::SpecController(int32_t k_max, bool adaptive) : k_max_(k_max), adaptive_(adaptive) {
  LADDER_CHECK(k_max_ >= 1, "speculation needs k_max >= 1");
}

double SpecController::expected_tokens(double a, int32_t k) {
  if (a >= 1.0) return k + 1;
  if (a <= 0.0) return 1;
  return (1 - std::pow(a, k + 1)) / (1 - a);
}

void SpecController::observe_forward(int64_t n_tokens, int64_t attention_work, double us) {
  if (++n_steps_ <= kColdSteps) return;
  forward_.add(static_cast<double>(n_tokens), static_cast<double>(attention_work) / 1000.0, us);
}

void SpecController::observe_draft(int64_t n_sequences, int64_t context, int32_t k, double us) {
  if (n_sequences < 1 || k < 1) return;
  draft_.add(static_cast<double>(n_sequences), static_cast<double>(context) / 1000.0, us / k);
}

SpecPlan SpecController::plan(std::span<const SpecCandidate> candidates, int64_t n_others,
                              int64_t others_context) {
  SpecPlan p;
  const size_t n = candidates.size();
  p.on.assign(n, false);
  if (n == 0) return p;
  const int64_t batch = static_cast<int64_t>(n) + n_others;  // decoding sequences: the gains' bucket
  last_batch_ = batch;
  auto all_on = [&](bool probing) {
    p.k = k_max_;
    p.on.assign(n, true);
    p.probing = probing;
    p.predicted_gain = 1.0;
  };
  if (!adaptive_) {
    all_on(false);
  } else if (n_cycles_ < kWarmupCycles || forward_.empty() || draft_.empty()) {
    all_on(true);  // nothing measured yet: speculate to measure
  } else if (!forward_.has_slope()) {
    p.probing = true;  // every step had the same size: a plain one measures the slope
  } else {
    const auto B = static_cast<double>(n);
    const double others = static_cast<double>(n_others);
    double context = static_cast<double>(others_context);  // attended positions of a plain step
    for (const SpecCandidate& c : candidates) context += static_cast<double>(c.context);
    const double plain_rate = B / std::max(1e-3, forward_.at(B + others, context / 1000.0));
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return candidates[a].acceptance > candidates[b].acceptance; });
    double best_rate = 0;
    size_t best_m = 0;
    int32_t best_k = 0;
    for (int32_t k = 1; k <= k_max_; ++k) {
      double tokens = B;  // every candidate emits at least one
      double draft_positions = 0;
      double verify_context = context;  // a verified position attends about its sequence's context
      double draft_context = 0;
      for (size_t m = 1; m <= n; ++m) {
        const SpecCandidate& c = candidates[order[m - 1]];
        const int32_t kc = std::min(k, c.k_cap);
        tokens += expected_tokens(c.acceptance, kc) - 1;
        draft_positions += kc;
        verify_context += static_cast<double>(kc) * static_cast<double>(c.context);
        draft_context += static_cast<double>(c.context);
        const double time = forward_.at(B + others + draft_positions, verify_context / 1000.0) +
                            k * draft_.at(static_cast<double>(m), draft_context / 1000.0);
        const double rate = tokens / std::max(1e-3, time);
        if (rate > best_rate) {
          best_rate = rate;
          best_m = m;
          best_k = k;
        }
      }
    }
    p.predicted_gain = best_rate / plain_rate;
    predicted_[spec_batch_bucket(batch)].add(p.predicted_gain);
    if (p.predicted_gain < kMinGain) best_m = 0;  // speculation does not pay: plain for all
    if (best_m > 0 && measured_.known(batch) && measured_.gain(batch) < 1.0) {
      best_m = 0;  // predicted to pay, measured to lose: the measurement decides
      p.overruled = true;
    }
    p.k = best_m > 0 ? best_k : 0;
    for (size_t m = 0; m < best_m; ++m) p.on[order[m]] = true;
    const int probe_every = measured_.known(batch) ? kPlainProbeEvery : kEarlyPlainProbeEvery;
    if (best_m > 0 && ++n_spec_plans_ % probe_every == 0) {
      // A plain step now and then measures the plain cost at this batch.
      p.on.assign(n, false);
      p.k = 0;
      p.probing = true;
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (!p.on[i] && candidates[i].steps_off >= kReprobeAfter) {
          p.on[i] = true;  // refresh a stale acceptance estimate
          p.k = std::max(p.k, k_max_);
          p.probing = true;
        }
      }
    }
  }
  p.measured_gain = measured_gain();
  last_gain_ = p.predicted_gain;
  last_enabled_ = std::find(p.on.begin(), p.on.end(), true) != p.on.end();
  last_k_ = last_enabled_ ? p.k : 0;
  return p;
}

}  // namespace ladder::engine
