#include "route/prefill_policy.h"

#include <algorithm>
#include <cmath>

namespace ladder::route {

const char* prefill_mode_name(PrefillMode mode) {
  switch (mode) {
    case PrefillMode::kMeasured: return "measured";
    case PrefillMode::kAlways: return "always";
    case PrefillMode::kNever: return "never";
  }
  return "unknown";
}

void DecayingLine::add(double x, double y) {
  w_ = w_ * decay_ + 1;
  sx_ = sx_ * decay_ + x;
  sy_ = sy_ * decay_ + y;
  sxx_ = sxx_ * decay_ + x * x;
  sxy_ = sxy_ * decay_ + x * y;
  ++n_;
}

std::optional<double> DecayingLine::mean() const {
  if (n_ == 0) return std::nullopt;
  return sy_ / w_;
}

std::optional<double> DecayingLine::slope() const {
  if (n_ < 2) return std::nullopt;
  const double var = sxx_ / w_ - (sx_ / w_) * (sx_ / w_);
  // Every x (nearly) the same: no slope can be told.
  if (!(var > 1e-9 * std::max(1.0, sxx_ / w_))) return std::nullopt;
  return (sxy_ / w_ - (sx_ / w_) * (sy_ / w_)) / var;
}

std::optional<double> DecayingLine::at(double x) const {
  const std::optional<double> b = slope();
  if (!b) return std::nullopt;
  return sy_ / w_ + *b * (x - sx_ / w_);
}

void ArrivalRate::arrive(double now_s) {
  rate_ = per_second(now_s) + 1 / tau_s_;
  last_s_ = now_s;
}

double ArrivalRate::per_second(double now_s) const {
  return rate_ * std::exp(-std::max(0.0, now_s - last_s_) / tau_s_);
}

namespace {

// A cost estimate at n: the fitted line, else the mean; never below 0.
std::optional<double> cost_at(const DecayingLine& line, double n) {
  std::optional<double> y = line.at(n);
  if (!y) y = line.mean();
  if (!y) return std::nullopt;
  return std::max(0.0, *y);
}

}  // namespace

PrefillDecision PrefillPolicy::decide(int64_t n_local, int64_t n_remote, int64_t decode_running, bool any_prefill,
                                      int64_t prefill_queue, const DecodeWorkerLoad& load) const {
  if (n_local <= 0) return {PrefillWhere::kLocal, "cached"};
  if (!any_prefill) return {PrefillWhere::kLocal, "no_prefill_worker"};
  if (mode_ == PrefillMode::kAlways) return {PrefillWhere::kRemote, "policy_always"};
  if (mode_ == PrefillMode::kNever) return {PrefillWhere::kLocal, "policy_never"};
  if (remote_.samples() < kMinSamples || local_.samples() < kMinSamples) {
    if (prefill_queue > 0) return {PrefillWhere::kLocal, "prefill_busy"};  // explore on an idle worker only
    return {remote_.samples() <= local_.samples() ? PrefillWhere::kRemote : PrefillWhere::kLocal, "exploring"};
  }
  if (tpot_ms_ > 0) {
    const int64_t chunk =
        load.prefill_chunk_tokens > 0 ? std::min(n_local, load.prefill_chunk_tokens) : n_local;
    const double step_ms = *cost_at(local_, static_cast<double>(chunk));
    if (step_ms > tpot_ms_) {
      const double whole_s = *cost_at(local_, static_cast<double>(n_local)) / 1000;
      const double arrival_chance = 1 - std::exp(-std::max(0.0, load.arrivals_per_s) * whole_s);
      if (decode_running > 0 || arrival_chance > kTailChance) return {PrefillWhere::kRemote, "tpot_slo"};
    }
  }
  const double remote = *cost_at(remote_, static_cast<double>(n_remote));
  const double wait = static_cast<double>(std::max<int64_t>(0, prefill_queue)) * std::max(0.0, *remote_.mean());
  const double local = *cost_at(local_, static_cast<double>(n_local));
  const double others = static_cast<double>(std::max<int64_t>(0, decode_running));
  if (remote + wait < (1 + others) * local) return {PrefillWhere::kRemote, "cheaper_remote"};
  if (wait > 0 && remote < (1 + others) * local) return {PrefillWhere::kLocal, "prefill_busy"};
  return {PrefillWhere::kLocal, "cheaper_local"};
}

std::optional<double> PrefillPolicy::threshold_tokens() const {
  const std::optional<double> br = remote_.slope();
  const std::optional<double> bl = local_.slope();
  if (!br || !bl) return std::nullopt;
  const double ar = *remote_.at(0);
  const double al = *local_.at(0);
  // ar + br n < al + bl n  <=>  n (bl - br) > ar - al
  if (*bl <= *br) {
    if (ar < al) return 0.0;  // remote is cheaper at every length
    return std::nullopt;      // never cheaper
  }
  return std::max(0.0, (ar - al) / (*bl - *br));
}

}  // namespace ladder::route
