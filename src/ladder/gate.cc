#include "ladder/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace ladder::climb {

namespace {

std::string fraction2(double v) {
  return fmt::format("{:.2f}", v);
}

// A bound of the interval: a relative change as a signed percent, an
// absolute one (A never good) as a signed fraction; "-inf" / "+inf" when
// unbounded.
std::string bound(double v, bool relative) {
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  return relative ? signed_percent(v) : fmt::format("{:+.3f}", v);
}

}  // namespace

std::string signed_percent(double fraction) {
  if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
  const double pct = 100.0 * fraction;
  // -0.0 and values that round to zero print as +0.0%.
  if (std::fabs(pct) < 0.05) return "+0.0%";
  return fmt::format("{:+.1f}%", pct);
}

GateDecision decide(const GoodputInterval& goodput, std::vector<SliceQuality> slices, double min_gain) {
  GateDecision d;
  std::stable_sort(slices.begin(), slices.end(), [](const SliceQuality& x, const SliceQuality& y) {
    return x.fraction() - x.margin < y.fraction() - y.margin;
  });
  std::vector<std::string> quality_failures;
  for (const auto& q : slices) {
    if (q.within()) continue;
    d.failed_slices.push_back(q.slice);
    if (q.compared == 0) {
      quality_failures.push_back(
          fmt::format("slice {} has no compared request ({} sent, none served and in the "
                      "reference)",
                      q.slice, q.requests));
    } else {
      quality_failures.push_back(fmt::format("slice {} verified {} < margin {} ({} of {} {})", q.slice,
                                             fraction2(q.fraction()), fraction2(q.margin), q.verified,
                                             q.compared, q.verify));
    }
  }
  // "goodput +12.5% CI [+4.1%, +20.3%] at 98% (look 2 of 4, 16 paired runs)"
  std::string interval = fmt::format("goodput {} CI [{}, {}] at {:g}%", signed_percent(goodput.gain),
                                     bound(goodput.ci_low, goodput.relative),
                                     bound(goodput.ci_high, goodput.relative), 100.0 * goodput.level);
  if (!goodput.relative) interval += " (A never good: interval of the change per paired request)";
  if (goodput.relative && std::isinf(goodput.ci_low) && std::isinf(goodput.ci_high)) {
    // Fieller's interval of a ratio whose denominator may be 0; the test is
    // of the paired difference, which is what decides.
    interval += " (ratio unbounded: A's goodput is not clearly above 0)";
  }
  if (goodput.looks_planned > 0) {
    interval += fmt::format(" (look {} of {}, {} paired runs)", goodput.look, goodput.looks_planned, goodput.runs);
  }
  const std::string bar = min_gain > 0 ? "min_gain " + signed_percent(min_gain) : "0";
  std::string goodput_verdict;
  bool goodput_ok = false;
  if (goodput.pairs == 0) {
    goodput_verdict = "no paired request to compare";
  } else if (goodput.verdict == Verdict::kAbove) {
    goodput_ok = true;
    goodput_verdict = interval + " above " + bar;
  } else if (goodput.verdict == Verdict::kBelow) {
    goodput_verdict = interval + " below " + bar;
  } else if (static_cast<int>(goodput.runs) < goodput.min_runs) {
    goodput_verdict = fmt::format("{}: {} paired runs cannot decide at this level (it needs {})", interval,
                                  goodput.runs, goodput.min_runs);
  } else {
    goodput_verdict = interval + " includes " + bar;
  }
  if (!quality_failures.empty()) {
    d.reason = fmt::format("rejected: {} ({})", fmt::join(quality_failures, "; "), goodput_verdict);
    return d;
  }
  if (!goodput_ok) {
    d.reason = "rejected: " + goodput_verdict;
    return d;
  }
  d.promote = true;
  std::string worst;
  if (!slices.empty()) {
    const SliceQuality& w = slices.front();
    worst = fmt::format("; every slice within its margin (closest: {} {} >= {})", w.slice,
                        fraction2(w.fraction()), fraction2(w.margin));
  }
  d.reason = "promoted: " + goodput_verdict + worst;
  return d;
}

nlohmann::json to_json(const GoodputInterval& g) {
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const char* verdict = g.verdict == Verdict::kAbove   ? "above"
                        : g.verdict == Verdict::kBelow ? "below"
                                                       : "undecided";
  return {{"pairs", g.pairs},
          {"runs", g.runs},
          {"a_good", g.a_good},
          {"b_good", g.b_good},
          {"gain", finite(g.gain)},
          {"ci_low", finite(g.ci_low)},
          {"ci_high", finite(g.ci_high)},
          {"relative", g.relative},
          {"level", g.level},
          {"confidence", g.confidence},
          {"t", finite(g.t)},
          {"df", g.df},
          {"verdict", verdict},
          {"repeats", g.repeats},
          {"look", g.look},
          {"looks_planned", g.looks_planned},
          {"run_sd", g.run_sd},
          {"statistic",
           "relative change of good requests; run-level paired t (Fieller) interval over paired runs, "
           "weighted Bonferroni over sequential looks"}};
}

nlohmann::json to_json(const SliceQuality& q) {
  return {{"slice", q.slice},       {"verify", q.verify},     {"requests", q.requests},
          {"compared", q.compared}, {"verified", q.verified}, {"fraction", q.fraction()},
          {"margin", q.margin},     {"within", q.within()}};
}

}  // namespace ladder::climb
