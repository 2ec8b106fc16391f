// Run-level paired evidence: the unit is a run, not a request.
//
// Requests of one replay share its bursts (another tenant's job, a page-cache
// flush, a thermal dip hit many of them at once), so the good outcomes of one
// run are correlated and counting its requests as independent draws makes
// an interval far too narrow. The unit of evidence is therefore one paired
// run: one workload replayed once against each side, the two replays
// adjacent in time. Its statistic is the pair of good-request counts
// (a_u, b_u) over the requests both sides served.
//
// The relative goodput change is r - 1 with r = E[b] / E[a], estimated as
// sum b / sum a. A test of r = r0 uses x_u = b_u - r0 a_u, whose mean is 0
// under that hypothesis: the paired t statistic t = mean(x) / (sd(x) /
// sqrt(m)) over the m runs, with m - 1 degrees of freedom. The interval for
// r is the set of r0 the test does not reject (Fieller's interval for a
// ratio of paired means); it is bounded when A's mean is itself clearly
// above 0 and unbounded otherwise. Assumptions: runs are independent given
// the configuration (bursts do not last across runs), and x_u is roughly
// symmetric (the A B / B A order within each block makes drift cancel, see
// sequential.h). Nothing at the request level narrows the interval; the
// request-level binomial noise is part of each run's x_u.
//
// When A had no good request in any run the ratio has no scale; the
// interval is then of the absolute change in good requests per paired
// request, and `relative` is false.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ladder::climb {

// What a test at one-sided level alpha says of "gain = min_gain": the gain
// is above it, below it, or the evidence does not say.
enum class Verdict { kUndecided, kAbove, kBelow };

// One request replayed on both sides of one paired run.
struct PairedOutcome {
  bool a_good = false;
  bool b_good = false;
};

// The requests of one paired run, matched by key.
struct PairedRepeat {
  std::vector<PairedOutcome> pairs;
};

// One unit of evidence.
struct PairedRun {
  std::string workload;
  int repeat = 0;        // 1-based, within its workload
  bool a_first = true;   // which side's replay ran first
  int64_t n = 0;         // requests both sides served (the paired ones)
  int64_t a_good = 0;
  int64_t b_good = 0;
};

PairedRun summarize_run(const std::string& workload, int repeat, bool a_first, const PairedRepeat& pairs);

struct GoodputInterval {
  size_t pairs = 0;  // paired requests over every run
  size_t runs = 0;   // paired runs: the units
  int64_t a_good = 0;
  int64_t b_good = 0;
  double gain = 0;   // (b_good - a_good) / a_good; +inf when a_good = 0 < b_good; 0 when both are 0
  double ci_low = 0;  // relative like gain (absolute per paired request when !relative); may be -inf
  double ci_high = 0;  // may be +inf
  bool relative = true;
  // The interval's two-sided level: 1 - 2 alpha for the one-sided alpha of
  // the look that made it (sequential.h spends the policy's alpha over looks).
  double level = 0.95;
  // The policy's nominal two-sided level, for the reason text.
  double confidence = 0.95;
  // The paired t test of the hypothesis "gain = min_gain" that decided.
  double t = 0;
  int df = 0;
  // Sequential bookkeeping (sequential.h): repeats per workload when it was
  // made, which look it was, of how many planned.
  int repeats = 0;
  int look = 0;
  int looks_planned = 0;
  // Run-to-run spread: the standard deviation of a run's good fraction
  // difference (b_u - a_u) / n_u.
  double run_sd = 0;
  // kAbove when t > the t quantile at alpha, kBelow when t < minus it, with
  // at least min_runs_to_decide(alpha) runs (sequential.h); else kUndecided.
  Verdict verdict = Verdict::kUndecided;
  int min_runs = 0;  // min_runs_to_decide(alpha)
};

// Runs a test at one-sided alpha needs before it may decide: 2^-m <= alpha
// (no m runs are stronger evidence than all m agreeing in sign, which an
// exact sign test puts at 2^-m).
int min_runs_to_decide(double alpha);

// Upper alpha quantile of Student's t with df degrees of freedom (df >= 1).
double t_quantile_upper(double alpha, int df);

// The run-level interval at one-sided level alpha (a two-sided 1 - 2 alpha
// interval), the t statistic at gain = min_gain and its verdict. Fewer than
// two runs give an unbounded interval, t = 0 and no verdict.
GoodputInterval run_level_interval(const std::vector<PairedRun>& runs, double alpha, double min_gain);

// One configuration's own goodput fraction (good / requests, pooled) with a
// two-sided t interval over its runs' fractions: good[run][request].
struct FractionInterval {
  double fraction = 0;
  double ci_low = 0;
  double ci_high = 0;
  size_t runs = 0;
  double run_sd = 0;  // standard deviation of one run's fraction
};
FractionInterval run_level_fraction(const std::vector<std::vector<bool>>& good, double confidence);

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace ladder::climb
