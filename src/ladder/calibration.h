// `ladder climb --calibrate N`: the gate checked on this machine. N
// comparisons of rung 1 against a second copy of itself go through the same
// path a candidate does (A B B A blocks, the sequential gate); none of them
// may be promoted but by chance, so the count of promotions is set against
// the rate the gate promises, (1 - confidence) / 2, with a binomial tail.
// The same runs measure how much one run differs from the next on this
// machine, and from that the smallest gain the policy's max_repeats can
// see. The summary goes to the ledger as a line of kind "ladder.calibration";
// a climb refuses to run on a machine and model whose last calibration
// failed (docs/CLIMB.md "Calibration").
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ladder/run_level.h"
#include "ladder/sequential.h"

namespace ladder::climb {

// A calibration fails when its promotions would happen by chance less than
// 1 time in 100 at the promised rate.
inline constexpr double kCalibrationFailP = 0.01;

struct CalibrationSummary {
  int comparisons = 0;
  int promoted = 0;   // self-vs-self promotions: false by construction
  int below = 0;      // self judged worse than self: the other tail's errors
  int undecided = 0;  // every look taken without a decision (the expected outcome)
  double alpha = 0;   // the promised false-promotion rate, (1 - confidence) / 2
  double p_value = 1;  // P(at least `promoted` of `comparisons` | alpha)
  bool passed = true;  // p_value >= kCalibrationFailP
  double run_sd = 0;   // median over comparisons of the between-run sd of b/n - a/n
  double a_fraction = 0;  // good requests per request on the A side, over every comparison
  double mean_repeats = 0;  // repeats per workload each comparison took, on average
  int max_runs = 0;         // paired runs at the policy's last look
  // The relative gain a comparison detects 8 times in 10 at the last look:
  // (t(alpha_last) + t(0.2)) * run_sd / sqrt(max_runs) / a_fraction.
  double min_detectable_gain = 0;
};

// P(X >= k) for X ~ Binomial(n, p).
double binomial_upper_tail(int k, int n, double p);

// `workloads`: how many paired runs each repeat adds.
CalibrationSummary summarize_calibration(const std::vector<GoodputInterval>& comparisons,
                                         const SequentialPlan& plan, size_t workloads);

nlohmann::json to_json(const CalibrationSummary& s);

// "calibration passed: 0 of 20 self-vs-self comparisons promoted (at most 2.5% promised, p = 1.00); ..."
std::string calibration_line(const CalibrationSummary& s);

}  // namespace ladder::climb
