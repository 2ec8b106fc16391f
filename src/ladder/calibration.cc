#include "ladder/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "harness/stats.h"

namespace ladder::climb {

double binomial_upper_tail(int k, int n, double p) {
  LADDER_CHECK(n >= 0 && p >= 0 && p <= 1, "binomial tail needs n >= 0 and p in [0, 1]");
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  // Summed in log space: n is small (a calibration's comparisons), but p may be tiny.
  double tail = 0;
  for (int i = k; i <= n; ++i) {
    const double log_term = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                            i * std::log(p) + (n - i) * std::log1p(-p);
    tail += std::exp(log_term);
  }
  return std::min(1.0, tail);
}

CalibrationSummary summarize_calibration(const std::vector<GoodputInterval>& comparisons,
                                         const SequentialPlan& plan, size_t workloads) {
  CalibrationSummary s;
  s.comparisons = static_cast<int>(comparisons.size());
  s.alpha = plan.alpha();
  std::vector<double> sds;
  size_t pairs = 0;
  int64_t a_good = 0;
  double repeats = 0;
  for (const GoodputInterval& g : comparisons) {
    s.promoted += g.verdict == Verdict::kAbove ? 1 : 0;
    s.below += g.verdict == Verdict::kBelow ? 1 : 0;
    s.undecided += g.verdict == Verdict::kUndecided ? 1 : 0;
    if (g.runs >= 2) sds.push_back(g.run_sd);
    pairs += g.pairs;
    a_good += g.a_good;
    repeats += g.repeats;
  }
  s.p_value = binomial_upper_tail(s.promoted, s.comparisons, s.alpha);
  s.passed = s.p_value >= kCalibrationFailP;
  if (!sds.empty()) {
    std::sort(sds.begin(), sds.end());
    s.run_sd = harness::percentile_sorted(sds, 50);
  }
  s.a_fraction = pairs > 0 ? static_cast<double>(a_good) / static_cast<double>(pairs) : 0.0;
  s.mean_repeats = s.comparisons > 0 ? repeats / s.comparisons : 0.0;
  s.max_runs = static_cast<int>(workloads) * plan.max_repeats();
  if (s.max_runs >= 2 && s.a_fraction > 0) {
    const int df = s.max_runs - 1;
    const double t = t_quantile_upper(plan.alpha_at(plan.looks.size() - 1), df) + t_quantile_upper(0.2, df);
    s.min_detectable_gain = t * s.run_sd / std::sqrt(static_cast<double>(s.max_runs)) / s.a_fraction;
  } else {
    s.min_detectable_gain = kInf;
  }
  return s;
}

nlohmann::json to_json(const CalibrationSummary& s) {
  return {{"comparisons", s.comparisons},
          {"promoted", s.promoted},
          {"below", s.below},
          {"undecided", s.undecided},
          {"alpha", s.alpha},
          {"p_value", s.p_value},
          {"fail_below_p", kCalibrationFailP},
          {"passed", s.passed},
          {"run_sd", s.run_sd},
          {"a_fraction", s.a_fraction},
          {"mean_repeats", s.mean_repeats},
          {"max_runs", s.max_runs},
          {"min_detectable_gain",
           std::isfinite(s.min_detectable_gain) ? nlohmann::json(s.min_detectable_gain) : nlohmann::json(nullptr)}};
}

std::string calibration_line(const CalibrationSummary& s) {
  const std::string mdg = std::isfinite(s.min_detectable_gain)
                              ? fmt::format("{:+.1f}%", 100 * s.min_detectable_gain)
                              : std::string("none (A never good)");
  return fmt::format(
      "calibration {}: {} of {} self-vs-self comparisons promoted (the gate promises at most {:g}% each; "
      "P(>= {}) = {:.3g}{}), {} judged worse, {} undecided; between-run sd of the good fraction {:.3f} on "
      "A's {:.3f}; {:.1f} repeats per comparison on average; smallest gain seen 8 times in 10 at {} paired "
      "runs: {}",
      s.passed ? "passed" : "FAILED", s.promoted, s.comparisons, 100 * s.alpha, s.promoted, s.p_value,
      s.passed ? "" : fmt::format(" < {:g}: this machine fools the gate", kCalibrationFailP), s.below,
      s.undecided, s.run_sd, s.a_fraction, s.mean_repeats, s.max_runs, mdg) +
         (s.a_fraction >= 1.0 ? "; A was good on every request: no candidate can gain goodput on these "
                                "workloads (tighten the SLO or raise the load until some requests miss it)"
                              : "");
}

}  // namespace ladder::climb
