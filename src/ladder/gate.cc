#include "ladder/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "harness/stats.h"

namespace ladder::climb {

namespace {

// floor(n * u) with u the top 53 bits of one draw: the same index on every
// standard library (std::uniform_int_distribution is not specified exactly).
size_t draw_index(std::mt19937_64& rng, size_t n) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::min(n - 1, static_cast<size_t>(u * static_cast<double>(n)));
}

std::string fraction2(double v) {
  return fmt::format("{:.2f}", v);
}

}  // namespace

std::string signed_percent(double fraction) {
  if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
  const double pct = 100.0 * fraction;
  // -0.0 and values that round to zero print as +0.0%.
  if (std::fabs(pct) < 0.05) return "+0.0%";
  return fmt::format("{:+.1f}%", pct);
}

std::vector<double> bootstrap_means(const std::vector<std::vector<std::vector<double>>>& values, int samples,
                                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> stats;
  stats.reserve(static_cast<size_t>(std::max(samples, 0)));
  for (int s = 0; s < samples; ++s) {
    double sum = 0;
    size_t count = 0;
    for (const auto& repeats : values) {
      if (repeats.empty()) continue;
      for (size_t j = 0; j < repeats.size(); ++j) {
        const auto& items = repeats[draw_index(rng, repeats.size())];
        for (size_t k = 0; k < items.size(); ++k) {
          sum += items[draw_index(rng, items.size())];
          ++count;
        }
      }
    }
    stats.push_back(count == 0 ? 0.0 : sum / static_cast<double>(count));
  }
  std::sort(stats.begin(), stats.end());
  return stats;
}

GoodputInterval bootstrap_goodput(const std::vector<PairedWorkload>& workloads, double confidence,
                                  int samples, uint64_t seed) {
  GoodputInterval g;
  g.confidence = confidence;
  g.samples = samples;
  std::vector<std::vector<std::vector<double>>> diffs;
  for (const auto& w : workloads) {
    auto& reps = diffs.emplace_back();
    for (const auto& r : w.repeats) {
      auto& items = reps.emplace_back();
      for (const auto& p : r.pairs) {
        ++g.pairs;
        g.a_good += p.a_good ? 1 : 0;
        g.b_good += p.b_good ? 1 : 0;
        items.push_back((p.b_good ? 1.0 : 0.0) - (p.a_good ? 1.0 : 0.0));
      }
    }
  }
  if (g.pairs == 0) return g;
  const double mean_a = static_cast<double>(g.a_good) / static_cast<double>(g.pairs);
  // With no good request on A the relative scale does not exist; the interval
  // is then of the absolute difference in goodput fraction.
  const double scale = g.a_good > 0 ? mean_a : 1.0;
  g.gain = g.a_good > 0   ? static_cast<double>(g.b_good - g.a_good) / static_cast<double>(g.a_good)
           : g.b_good > 0 ? std::numeric_limits<double>::infinity()
                          : 0.0;
  const std::vector<double> stats = bootstrap_means(diffs, samples, seed);
  const double tail = 100.0 * (1.0 - confidence) / 2.0;
  g.ci_low = harness::percentile_sorted(stats, tail) / scale;
  g.ci_high = harness::percentile_sorted(stats, 100.0 - tail) / scale;
  return g;
}

FractionInterval bootstrap_fraction(const std::vector<std::vector<std::vector<bool>>>& good,
                                    double confidence, int samples, uint64_t seed) {
  FractionInterval f;
  std::vector<std::vector<std::vector<double>>> values;
  size_t n = 0, k = 0;
  for (const auto& w : good) {
    auto& reps = values.emplace_back();
    for (const auto& r : w) {
      auto& items = reps.emplace_back();
      for (bool g : r) {
        items.push_back(g ? 1.0 : 0.0);
        ++n;
        k += g ? 1 : 0;
      }
    }
  }
  if (n == 0) return f;
  f.fraction = static_cast<double>(k) / static_cast<double>(n);
  const std::vector<double> stats = bootstrap_means(values, samples, seed);
  const double tail = 100.0 * (1.0 - confidence) / 2.0;
  f.ci_low = harness::percentile_sorted(stats, tail);
  f.ci_high = harness::percentile_sorted(stats, 100.0 - tail);
  return f;
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
  const std::string interval = fmt::format("goodput {} CI [{}, {}] at {:g}%", signed_percent(goodput.gain),
                                           signed_percent(goodput.ci_low), signed_percent(goodput.ci_high),
                                           100.0 * goodput.confidence);
  std::string goodput_verdict;
  bool goodput_ok = false;
  if (goodput.pairs == 0) {
    goodput_verdict = "no paired request to compare";
  } else if (goodput.ci_low > min_gain) {
    goodput_ok = true;
    goodput_verdict = interval + (min_gain > 0 ? " above min_gain " + signed_percent(min_gain) : " above 0");
  } else if (min_gain > 0) {
    goodput_verdict = fmt::format("{}: lower bound {} not above min_gain {}", interval,
                                  signed_percent(goodput.ci_low), signed_percent(min_gain));
  } else if (goodput.ci_high <= 0 && goodput.ci_low < 0) {
    goodput_verdict = interval + " below 0";
  } else {
    goodput_verdict = interval + " includes 0";
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
  return {{"pairs", g.pairs},
          {"a_good", g.a_good},
          {"b_good", g.b_good},
          {"gain", finite(g.gain)},
          {"ci_low", g.ci_low},
          {"ci_high", g.ci_high},
          {"confidence", g.confidence},
          {"bootstrap_samples", g.samples},
          {"statistic",
           "relative change of good requests, paired; two-stage bootstrap over repeats and requests"}};
}

nlohmann::json to_json(const SliceQuality& q) {
  return {{"slice", q.slice},       {"verify", q.verify},     {"requests", q.requests},
          {"compared", q.compared}, {"verified", q.verified}, {"fraction", q.fraction()},
          {"margin", q.margin},     {"within", q.within()}};
}

}  // namespace ladder::climb
