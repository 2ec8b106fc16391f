// The promotion gate: the run-level interval against numbers computed by
// hand (a brute-force search of the t test's acceptance region, written in
// the comments), the sequential plan's looks and error shares, the decisions
// with their reasons, and the error rate and power of the whole sequential
// procedure on simulated noisy runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ladder/calibration.h"
#include "ladder/gate.h"
#include "ladder/sequential.h"

namespace ladder::climb {
namespace {

std::vector<PairedRun> runs_of(const std::vector<std::pair<int, int>>& ab, int n = 30) {
  std::vector<PairedRun> out;
  for (size_t i = 0; i < ab.size(); ++i) {
    PairedRun r;
    r.workload = "w";
    r.repeat = static_cast<int>(i) + 1;
    r.n = n;
    r.a_good = ab[i].first;
    r.b_good = ab[i].second;
    out.push_back(r);
  }
  return out;
}

TEST(RunLevel, SummarizeCountsThePairs) {
  PairedRepeat p;
  p.pairs = {{true, true}, {false, true}, {true, false}, {false, false}, {false, true}};
  const PairedRun r = summarize_run("chat", 3, false, p);
  EXPECT_EQ(r.workload, "chat");
  EXPECT_EQ(r.repeat, 3);
  EXPECT_FALSE(r.a_first);
  EXPECT_EQ(r.n, 5);
  EXPECT_EQ(r.a_good, 2);
  EXPECT_EQ(r.b_good, 3);
}

TEST(RunLevel, IdenticalSidesGiveAZeroWidthIntervalAtZero) {
  // b = a in every run, the runs themselves differing: x(r) = (1 - r) a, so
  // only r = 1 is accepted.
  const GoodputInterval g = run_level_interval(runs_of({{20, 20}, {25, 25}, {18, 18}, {22, 22}}), 0.025, 0);
  EXPECT_EQ(g.runs, 4u);
  EXPECT_EQ(g.pairs, 120u);
  EXPECT_EQ(g.gain, 0.0);
  EXPECT_NEAR(g.ci_low, 0.0, 1e-12);
  EXPECT_NEAR(g.ci_high, 0.0, 1e-12);
  EXPECT_EQ(g.t, 0.0);
  EXPECT_EQ(g.verdict, Verdict::kUndecided);
}

TEST(RunLevel, MatchesABruteForceSearchOfTheTTest) {
  // a = 20 22 19 21 20 23 18 21, b = 24 25 23 26 22 27 21 25 (8 runs).
  // gain = 193 / 164 - 1 = 0.176829. Searching r on a 1e-6 grid for
  // |mean(b - r a)| / (sd(b - r a) / sqrt 8) <= t(0.975, 7) = 2.364624 gives
  // r in [1.140589, 1.213395]. At min_gain 0.1 the t statistic is 5.000720.
  const auto runs =
      runs_of({{20, 24}, {22, 25}, {19, 23}, {21, 26}, {20, 22}, {23, 27}, {18, 21}, {21, 25}});
  const GoodputInterval g = run_level_interval(runs, 0.025, 0.1);
  EXPECT_NEAR(g.gain, 0.1768292683, 1e-9);
  EXPECT_NEAR(g.ci_low, 0.140589, 2e-6);
  EXPECT_NEAR(g.ci_high, 0.213395, 2e-6);
  EXPECT_NEAR(g.t, 5.000720, 1e-5);
  EXPECT_EQ(g.df, 7);
  EXPECT_NEAR(g.level, 0.95, 1e-12);
  // 8 runs decide at one-sided 0.025 (2^-8 < 0.025), and t > 2.3646.
  EXPECT_EQ(g.verdict, Verdict::kAbove);
  EXPECT_NEAR(t_quantile_upper(0.025, 7), 2.364624, 1e-6);
}

TEST(RunLevel, AGainInOneRunOnlyIsNotEvidence) {
  // The old request-level bootstrap saw 20 extra good requests of 50 as a
  // sure gain; at the run level it is one run of four.
  const GoodputInterval g = run_level_interval(runs_of({{30, 50}, {50, 50}, {48, 48}, {49, 49}}, 50), 0.025, 0);
  EXPECT_GT(g.gain, 0.1);
  EXPECT_LT(g.ci_low, 0.0);
  EXPECT_EQ(g.verdict, Verdict::kUndecided);
}

TEST(RunLevel, TooFewRunsCannotDecide) {
  // Every run +5: an unbounded t, but 4 runs agreeing in sign are p = 1/16
  // under a sign test, not below 0.025.
  const GoodputInterval g = run_level_interval(runs_of({{10, 15}, {12, 17}, {11, 16}, {13, 18}}), 0.025, 0);
  EXPECT_TRUE(std::isinf(g.t));
  EXPECT_EQ(g.min_runs, 6);
  EXPECT_EQ(g.verdict, Verdict::kUndecided);
  const GoodputInterval six =
      run_level_interval(runs_of({{10, 15}, {12, 17}, {11, 16}, {13, 18}, {10, 15}, {12, 17}}), 0.025, 0);
  EXPECT_EQ(six.verdict, Verdict::kAbove);
}

TEST(RunLevel, ANeverGoodAIsJudgedOnTheAbsoluteChange) {
  const GoodputInterval g = run_level_interval(
      runs_of({{0, 10}, {0, 12}, {0, 9}, {0, 11}, {0, 10}, {0, 12}, {0, 9}, {0, 11}}, 20), 0.025, 0.5);
  EXPECT_FALSE(g.relative);
  EXPECT_TRUE(std::isinf(g.gain));
  EXPECT_GT(g.ci_low, 0.4);  // B is good on about half the paired requests
  EXPECT_EQ(g.verdict, Verdict::kAbove);
  const GateDecision d = decide(g, {}, 0.5);
  EXPECT_TRUE(d.promote) << d.reason;
  EXPECT_NE(d.reason.find("A never good"), std::string::npos) << d.reason;
}

TEST(RunLevel, FractionIntervalIsOverRuns) {
  // Runs at 1.0, 0.5, 1.0, 0.5 (4 requests each): pooled 0.75, run sd
  // 0.288675, half-width t(0.975, 3) 3.18244631 * 0.28867513 / 2 = 0.45934656.
  const FractionInterval f = run_level_fraction({{true, true, true, true},
                                                 {true, false, true, false},
                                                 {true, true, true, true},
                                                 {false, true, false, true}},
                                                0.95);
  EXPECT_EQ(f.runs, 4u);
  EXPECT_DOUBLE_EQ(f.fraction, 0.75);
  EXPECT_NEAR(f.run_sd, 0.288675, 1e-6);
  EXPECT_NEAR(f.ci_low, 0.75 - 0.45934656, 1e-7);
  EXPECT_DOUBLE_EQ(f.ci_high, 1.0);  // clipped
}

TEST(Sequential, LooksDoubleUpToTheMaximumAndSpendAlphaOnce) {
  Result<SequentialPlan> p = SequentialPlan::make(4, 32, 0.95);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->looks, (std::vector<int>{4, 8, 16, 32}));
  // Shares 1/5, 1/5, 1/5, 2/5 of 0.025.
  EXPECT_NEAR(p->alpha_at(0), 0.005, 1e-15);
  EXPECT_NEAR(p->alpha_at(2), 0.005, 1e-15);
  EXPECT_NEAR(p->alpha_at(3), 0.01, 1e-15);
  double total = 0;
  for (size_t i = 0; i < p->looks.size(); ++i) total += p->alpha_at(i);
  EXPECT_NEAR(total, p->alpha(), 1e-15);
  EXPECT_EQ(SequentialPlan::make(6, 20, 0.9)->looks, (std::vector<int>{6, 12, 20}));
  EXPECT_EQ(SequentialPlan::make(2, 2, 0.95)->looks, (std::vector<int>{2}));
  EXPECT_NEAR(SequentialPlan::make(2, 2, 0.95)->alpha_at(0), 0.025, 1e-15);
  EXPECT_FALSE(SequentialPlan::make(3, 8, 0.95).is_ok());
  EXPECT_FALSE(SequentialPlan::make(8, 4, 0.95).is_ok());
}

TEST(Sequential, BlocksAlternateTheirOrder) {
  EXPECT_STREQ(block_order(0), "ABBA");
  EXPECT_STREQ(block_order(1), "BAAB");
  EXPECT_STREQ(block_order(2), "ABBA");
}

TEST(Sequential, AClearGainStopsAtTheFirstLook) {
  SequentialGate gate(*SequentialPlan::make(4, 32, 0.95), 0);
  int repeats = 0;
  bool done = false;
  for (int block = 0; block < 16 && !done; ++block) {
    for (const char* w : {"x", "y"}) {
      for (int i = 0; i < 2; ++i) {
        gate.add({w, repeats + i + 1, i == 0, 24, 12 + i, 22 + i});
      }
    }
    repeats += 2;
    done = gate.after_block(repeats, false);
  }
  EXPECT_EQ(repeats, 4);
  EXPECT_EQ(gate.looks_taken(), 1);
  EXPECT_EQ(gate.verdict(), Verdict::kAbove);
  EXPECT_EQ(gate.interval().runs, 8u);
  EXPECT_EQ(gate.interval().look, 1);
  EXPECT_EQ(gate.interval().looks_planned, 4);
  EXPECT_NEAR(gate.interval().level, 0.99, 1e-12);
}

TEST(Sequential, ASpentBudgetTakesTheLastShareNow) {
  SequentialGate gate(*SequentialPlan::make(4, 32, 0.95), 0);
  for (int i = 0; i < 4; ++i) gate.add({"w", i + 1, i % 2 == 0, 24, 12, 12 + (i % 2)});
  EXPECT_FALSE(gate.after_block(2, false));  // before the first look: nothing
  EXPECT_EQ(gate.looks_taken(), 0);
  EXPECT_TRUE(gate.after_block(2, true));
  EXPECT_EQ(gate.looks_taken(), 4);
  EXPECT_NEAR(gate.interval().level, 1 - 2 * 0.01, 1e-12);
}

// The sequential procedure on simulated climbs: two workloads of 24 requests
// a run; every run (each side, each repeat) gets its own load shift, a
// normal draw of standard deviation 0.15 added to P(good) = 0.7 (clipped to
// [0, 1]), so requests of one run are correlated as on a shared machine; B's
// P(good) is A's times 1 + gain. `drift` adds this much to P(good) for each
// place a run comes later within its block of four (a load that ramps up
// and resets: a neighbour's periodic job, a cache that warms between runs).
struct SimulatedClimbs {
  int promoted = 0;
  double mean_repeats = 0;
};

SimulatedClimbs simulate(int climbs, double gain, uint64_t seed, double drift = 0, bool a_always_first = false) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> shift(0, 0.15);
  constexpr int kRequests = 24;
  const SequentialPlan plan = *SequentialPlan::make(4, 32, 0.95);
  SimulatedClimbs out;
  for (int c = 0; c < climbs; ++c) {
    SequentialGate gate(plan, 0);
    int repeats = 0;
    for (int block = 0;; ++block) {
      const std::string order = a_always_first ? "ABAB" : block_order(block);
      for (int w = 0; w < 2; ++w) {
        int good[2][2];  // [side][which]
        int count[2] = {0, 0};
        bool a_first[2] = {};
        for (int pos = 0; pos < 4; ++pos) {
          const int side = order[pos] == 'A' ? 0 : 1;
          const int which = count[side]++;
          if (count[side] > count[1 - side]) a_first[which] = side == 0;
          const double p = std::clamp((side == 1 ? 0.7 * (1 + gain) : 0.7) + shift(rng) + drift * pos, 0.0, 1.0);
          good[side][which] = std::binomial_distribution<int>(kRequests, p)(rng);
        }
        for (int which = 0; which < 2; ++which) {
          gate.add({w == 0 ? "x" : "y", repeats + which + 1, a_first[which], kRequests, good[0][which], good[1][which]});
        }
      }
      repeats += 2;
      if (gate.after_block(repeats, false)) break;
    }
    out.promoted += gate.verdict() == Verdict::kAbove ? 1 : 0;
    out.mean_repeats += static_cast<double>(repeats) / climbs;
  }
  return out;
}

TEST(Sequential, NoTrueDifferenceIsPromotedAtMostAtTheNominalRate) {
  // 10,000 simulated self-vs-self climbs under per-run load shifts: at most
  // the nominal one-sided 2.5% plus one point. (The request-level bootstrap
  // this replaced promoted 6-7.5% of such climbs.)
  const SimulatedClimbs s = simulate(10000, 0.0, 20261202);
  EXPECT_LE(s.promoted, 350) << s.promoted << " of 10000 promoted";
  // Nothing stops a null comparison early but an upper bound below 0.
  EXPECT_GT(s.mean_repeats, 28);
}

TEST(Sequential, ATrueFifteenPercentGainIsPromotedFourTimesInFive) {
  const SimulatedClimbs s = simulate(2000, 0.15, 7);
  EXPECT_GE(s.promoted, 1600) << s.promoted << " of 2000 promoted";
  // ... and a large one early: +40% is seen within the first looks.
  const SimulatedClimbs big = simulate(500, 0.40, 8);
  EXPECT_EQ(big.promoted, 500);
  EXPECT_LT(big.mean_repeats, 10);
}

TEST(Sequential, CounterbalancedOrderCancelsDrift) {
  // P(good) rises by 0.04 with each place later in a block: always running
  // A first hands B the later, better half of every pair and promotes a
  // candidate that is no better; A B B A / B A A B does not.
  const SimulatedClimbs fixed_order = simulate(2000, 0.0, 11, 0.04, true);
  const SimulatedClimbs balanced = simulate(2000, 0.0, 11, 0.04, false);
  EXPECT_GT(fixed_order.promoted, 200) << fixed_order.promoted;
  EXPECT_LE(balanced.promoted, 70) << balanced.promoted;
}

GoodputInterval interval(double gain, double lo, double hi, Verdict v) {
  GoodputInterval g;
  g.pairs = 100;
  g.runs = 8;
  g.a_good = 80;
  g.b_good = 90;
  g.gain = gain;
  g.ci_low = lo;
  g.ci_high = hi;
  g.level = 0.95;
  g.verdict = v;
  g.min_runs = 6;
  return g;
}

SliceQuality slice(const std::string& name, size_t compared, size_t verified, double margin) {
  SliceQuality q;
  q.slice = name;
  q.verify = "exact";
  q.requests = compared;
  q.compared = compared;
  q.verified = verified;
  q.margin = margin;
  return q;
}

TEST(Gate, PromotesWhenTheLookSaysAboveAndEverySliceIsWithinItsMargin) {
  GoodputInterval g = interval(0.125, 0.041, 0.203, Verdict::kAbove);
  g.look = 2;
  g.looks_planned = 4;
  g.level = 0.99;
  const GateDecision d = decide(g, {slice("chat", 10, 10, 1.0), slice("long", 8, 8, 0.9)}, 0);
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.reason.rfind("promoted: goodput +12.5% CI [+4.1%, +20.3%] at 99% (look 2 of 4, 8 paired runs) above 0",
                           0),
            0u)
      << d.reason;
}

TEST(Gate, RejectsAnIntervalThatIncludesZeroWithItsNumbers) {
  const GateDecision d = decide(interval(0.008, -0.021, 0.034, Verdict::kUndecided), {slice("chat", 10, 10, 1.0)}, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_EQ(d.reason, "rejected: goodput +0.8% CI [-2.1%, +3.4%] at 95% includes 0");
}

TEST(Gate, RejectsALossBelowZero) {
  const GateDecision d = decide(interval(-0.06, -0.1, -0.02, Verdict::kBelow), {}, 0);
  EXPECT_EQ(d.reason, "rejected: goodput -6.0% CI [-10.0%, -2.0%] at 95% below 0");
}

TEST(Gate, SaysWhenTooFewRunsCouldDecide) {
  GoodputInterval g = interval(0.3, 0.1, 0.5, Verdict::kUndecided);
  g.runs = 4;
  const GateDecision d = decide(g, {}, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("4 paired runs cannot decide at this level (it needs 6)"), std::string::npos) << d.reason;
}

TEST(Gate, AnUnboundedIntervalIsPrintedAsSuch) {
  const GateDecision d = decide(interval(0.2, -kInf, kInf, Verdict::kUndecided), {}, 0);
  EXPECT_EQ(d.reason,
            "rejected: goodput +20.0% CI [-inf, +inf] at 95% (ratio unbounded: A's goodput is not clearly above 0) "
            "includes 0");
}

TEST(Gate, MinGainIsTheBar) {
  const GateDecision d = decide(interval(0.05, 0.01, 0.09, Verdict::kUndecided), {}, 0.02);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("includes min_gain +2.0%"), std::string::npos) << d.reason;
  EXPECT_TRUE(decide(interval(0.05, 0.03, 0.09, Verdict::kAbove), {}, 0.02).promote);
}

TEST(Gate, OneSliceBelowItsMarginRejectsWhilePooledLooksFine) {
  // Pooled: (19 + 7) / (20 + 10) = 0.87 >= 0.8; the long slice alone: 0.70 < 0.80.
  const GateDecision d = decide(interval(0.3, 0.2, 0.4, Verdict::kAbove),
                                {slice("chat", 20, 19, 0.8), slice("long", 10, 7, 0.8)}, 0);
  EXPECT_FALSE(d.promote);
  ASSERT_EQ(d.failed_slices.size(), 1u);
  EXPECT_EQ(d.failed_slices[0], "long");
  EXPECT_EQ(d.reason.rfind("rejected: slice long verified 0.70 < margin 0.80 (7 of 10 exact)", 0), 0u)
      << d.reason;
  // The goodput verdict is still stated.
  EXPECT_NE(d.reason.find("goodput +30.0%"), std::string::npos);
}

TEST(Gate, FailingSlicesAreNamedWorstFirst) {
  const GateDecision d = decide(interval(0.3, 0.2, 0.4, Verdict::kAbove),
                                {slice("a", 10, 8, 0.9), slice("b", 10, 2, 0.9), slice("c", 10, 10, 0.9)}, 0);
  ASSERT_EQ(d.failed_slices.size(), 2u);
  EXPECT_EQ(d.failed_slices[0], "b");
  EXPECT_EQ(d.failed_slices[1], "a");
}

TEST(Gate, ASliceWithNothingComparedFails) {
  SliceQuality q = slice("rare", 0, 0, 0.5);
  q.requests = 4;
  const GateDecision d = decide(interval(0.3, 0.2, 0.4, Verdict::kAbove), {q}, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("slice rare has no compared request (4 sent"), std::string::npos) << d.reason;
}

TEST(Gate, SignedPercent) {
  EXPECT_EQ(signed_percent(0.008), "+0.8%");
  EXPECT_EQ(signed_percent(-0.021), "-2.1%");
  EXPECT_EQ(signed_percent(-0.0001), "+0.0%");
  EXPECT_EQ(signed_percent(1.5), "+150.0%");
}

// Binomial tails against sums done by hand (Python's math.comb):
// P(X >= 1 | 20, 0.025) = 1 - 0.975^20.
TEST(Calibration, BinomialTailIsExact) {
  EXPECT_NEAR(binomial_upper_tail(1, 20, 0.025), 0.3973123197808994, 1e-12);
  EXPECT_NEAR(binomial_upper_tail(3, 20, 0.025), 0.012955285058659323, 1e-12);
  EXPECT_NEAR(binomial_upper_tail(4, 20, 0.025), 0.0013727574460937935, 1e-12);
  EXPECT_NEAR(binomial_upper_tail(2, 10, 0.005), 0.0010953906163501228, 1e-12);
  EXPECT_EQ(binomial_upper_tail(0, 20, 0.025), 1.0);
  EXPECT_EQ(binomial_upper_tail(21, 20, 0.025), 0.0);
}

GoodputInterval self_comparison(Verdict v, double run_sd, int64_t a_good, size_t pairs) {
  GoodputInterval g;
  g.verdict = v;
  g.run_sd = run_sd;
  g.runs = 8;
  g.pairs = pairs;
  g.a_good = a_good;
  g.b_good = a_good;
  g.repeats = 4;
  return g;
}

// 20 comparisons at 2.5% each: 3 promotions happen by chance 1.3% of the
// time (passes), 4 only 0.14% (fails: the machine fools the gate).
TEST(Calibration, PromotionsBeyondChanceFail) {
  const SequentialPlan plan = *SequentialPlan::make(4, 4, 0.95);
  auto run = [&](int promoted) {
    std::vector<GoodputInterval> c;
    for (int i = 0; i < 20; ++i) {
      c.push_back(self_comparison(i < promoted ? Verdict::kAbove : Verdict::kUndecided, 0.05, 80, 100));
    }
    return summarize_calibration(c, plan, 2);
  };
  const CalibrationSummary three = run(3);
  EXPECT_EQ(three.promoted, 3);
  EXPECT_EQ(three.undecided, 17);
  EXPECT_TRUE(three.passed);
  EXPECT_NEAR(three.p_value, 0.012955285058659323, 1e-12);
  const CalibrationSummary four = run(4);
  EXPECT_FALSE(four.passed);
  EXPECT_NE(calibration_line(four).find("calibration FAILED: 4 of 20"), std::string::npos) << calibration_line(four);
  // The smallest gain 8 runs see 8 times in 10 at one-sided 2.5%:
  // (t(0.025, 7) 2.364624 + t(0.2, 7) 0.896029) * 0.05 / sqrt(8) / 0.8.
  EXPECT_EQ(three.max_runs, 8);
  EXPECT_NEAR(three.a_fraction, 0.8, 1e-12);
  EXPECT_NEAR(three.min_detectable_gain, 0.0720509, 1e-6);
}

TEST(Calibration, RunSdIsTheMedianOverComparisons) {
  const SequentialPlan plan = *SequentialPlan::make(4, 8, 0.95);
  std::vector<GoodputInterval> c{self_comparison(Verdict::kUndecided, 0.30, 10, 20),
                                 self_comparison(Verdict::kBelow, 0.01, 10, 20),
                                 self_comparison(Verdict::kUndecided, 0.02, 10, 20),
                                 self_comparison(Verdict::kUndecided, 0.04, 10, 20)};
  const CalibrationSummary s = summarize_calibration(c, plan, 1);
  EXPECT_NEAR(s.run_sd, 0.03, 1e-12);
  EXPECT_EQ(s.below, 1);
  EXPECT_EQ(s.max_runs, 8);
  EXPECT_NEAR(s.mean_repeats, 4.0, 1e-12);
}

}  // namespace
}  // namespace ladder::climb
