#include "ladder/run_level.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "common/check.h"

namespace ladder::climb {

namespace {

struct Moments {
  double mean_a = 0, mean_b = 0;
  double s_aa = 0, s_bb = 0, s_ab = 0;  // sample (co)variances, m - 1 in the denominator
};

Moments moments(const std::vector<PairedRun>& runs) {
  Moments mo;
  const double m = static_cast<double>(runs.size());
  for (const PairedRun& r : runs) {
    mo.mean_a += static_cast<double>(r.a_good) / m;
    mo.mean_b += static_cast<double>(r.b_good) / m;
  }
  if (runs.size() < 2) return mo;
  for (const PairedRun& r : runs) {
    const double da = static_cast<double>(r.a_good) - mo.mean_a;
    const double db = static_cast<double>(r.b_good) - mo.mean_b;
    mo.s_aa += da * da / (m - 1);
    mo.s_bb += db * db / (m - 1);
    mo.s_ab += da * db / (m - 1);
  }
  return mo;
}

// mean / (sd / sqrt(m)), with a zero spread giving +-inf (or 0 for a zero mean).
double t_statistic(double mean, double variance, double m) {
  // Counts are integers: a variance this small is rounding, not spread.
  if (variance <= 1e-12 * std::max(1.0, mean * mean)) {
    return mean > 0 ? kInf : mean < 0 ? -kInf : 0.0;
  }
  return mean / std::sqrt(variance / m);
}

double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

PairedRun summarize_run(const std::string& workload, int repeat, bool a_first, const PairedRepeat& pairs) {
  PairedRun r;
  r.workload = workload;
  r.repeat = repeat;
  r.a_first = a_first;
  for (const PairedOutcome& p : pairs.pairs) {
    ++r.n;
    r.a_good += p.a_good ? 1 : 0;
    r.b_good += p.b_good ? 1 : 0;
  }
  return r;
}

int min_runs_to_decide(double alpha) {
  LADDER_CHECK(alpha > 0 && alpha < 1, "alpha must be in (0, 1)");
  return std::max(2, static_cast<int>(std::ceil(std::log2(1 / alpha) - 1e-9)));
}

double t_quantile_upper(double alpha, int df) {
  LADDER_CHECK(df >= 1 && alpha > 0 && alpha < 1, "t quantile needs df >= 1 and alpha in (0, 1)");
  const boost::math::students_t dist(static_cast<double>(df));
  return boost::math::quantile(boost::math::complement(dist, alpha));
}

GoodputInterval run_level_interval(const std::vector<PairedRun>& runs, double alpha, double min_gain) {
  GoodputInterval g;
  g.level = 1 - 2 * alpha;
  g.min_runs = min_runs_to_decide(alpha);
  g.runs = runs.size();
  std::vector<double> diffs;
  for (const PairedRun& r : runs) {
    g.pairs += static_cast<size_t>(r.n);
    g.a_good += r.a_good;
    g.b_good += r.b_good;
    if (r.n > 0) diffs.push_back(static_cast<double>(r.b_good - r.a_good) / static_cast<double>(r.n));
  }
  g.run_sd = sample_sd(diffs);
  g.relative = g.a_good > 0;
  g.gain = g.a_good > 0   ? static_cast<double>(g.b_good - g.a_good) / static_cast<double>(g.a_good)
           : g.b_good > 0 ? kInf
                          : 0.0;
  g.ci_low = -kInf;
  g.ci_high = kInf;
  if (runs.size() < 2) return g;
  const double m = static_cast<double>(runs.size());
  g.df = static_cast<int>(runs.size()) - 1;
  const double tc = t_quantile_upper(alpha, g.df);

  const bool enough = static_cast<int>(runs.size()) >= g.min_runs;
  auto judge = [&] {
    if (!enough) return;
    g.verdict = g.t > tc ? Verdict::kAbove : g.t < -tc ? Verdict::kBelow : Verdict::kUndecided;
  };

  if (!g.relative) {
    // A never good: the absolute change per paired request, B's good
    // fraction per run; any B > 0 is an infinite relative gain, so the test
    // is of B > 0 whatever min_gain says.
    std::vector<double> x;
    double mean = 0;
    for (const PairedRun& r : runs) x.push_back(r.n > 0 ? static_cast<double>(r.b_good) / static_cast<double>(r.n) : 0);
    for (double v : x) mean += v / m;
    const double sd = sample_sd(x);
    g.t = t_statistic(mean, sd * sd, m);
    g.ci_low = mean - tc * sd / std::sqrt(m);
    g.ci_high = mean + tc * sd / std::sqrt(m);
    judge();
    return g;
  }

  const Moments mo = moments(runs);
  // The test of r0 = 1 + min_gain: x_u = b_u - r0 a_u.
  const double r0 = 1 + min_gain;
  g.t = t_statistic(mo.mean_b - r0 * mo.mean_a, mo.s_bb - 2 * r0 * mo.s_ab + r0 * r0 * mo.s_aa, m);
  judge();
  // Fieller: the r with (mean_b - r mean_a)^2 <= q (s_bb - 2 r s_ab + r^2 s_aa),
  // q = tc^2 / m, i.e. qa r^2 + qb r + qc <= 0.
  const double q = tc * tc / m;
  const double qa = mo.mean_a * mo.mean_a - q * mo.s_aa;
  const double qb = -2 * (mo.mean_a * mo.mean_b - q * mo.s_ab);
  const double qc = mo.mean_b * mo.mean_b - q * mo.s_bb;
  if (qa <= 0) return g;  // A's mean is not clearly above 0: no bounded interval
  const double disc = std::max(0.0, qb * qb - 4 * qa * qc);
  const double root = std::sqrt(disc);
  g.ci_low = (-qb - root) / (2 * qa) - 1;
  g.ci_high = (-qb + root) / (2 * qa) - 1;
  return g;
}

FractionInterval run_level_fraction(const std::vector<std::vector<bool>>& good, double confidence) {
  FractionInterval f;
  std::vector<double> per_run;
  size_t n = 0, k = 0;
  for (const auto& run : good) {
    if (run.empty()) continue;
    size_t kr = 0;
    for (bool g : run) kr += g ? 1 : 0;
    n += run.size();
    k += kr;
    per_run.push_back(static_cast<double>(kr) / static_cast<double>(run.size()));
  }
  f.runs = per_run.size();
  if (n == 0) return f;
  f.fraction = static_cast<double>(k) / static_cast<double>(n);
  f.run_sd = sample_sd(per_run);
  if (per_run.size() < 2) {
    f.ci_low = 0;
    f.ci_high = 1;
    return f;
  }
  const double half = t_quantile_upper((1 - confidence) / 2, static_cast<int>(per_run.size()) - 1) * f.run_sd /
                      std::sqrt(static_cast<double>(per_run.size()));
  f.ci_low = std::max(0.0, f.fraction - half);
  f.ci_high = std::min(1.0, f.fraction + half);
  return f;
}

}  // namespace ladder::climb
