// The promotion gate against hand-computed numbers: the bootstrap on fixed
// data with a fixed seed, and the promote / reject decisions with their
// reasons.
#include "ladder/gate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ladder::climb {
namespace {

PairedRepeat repeat_of(int both_good, int only_b, int only_a, int neither) {
  PairedRepeat r;
  for (int i = 0; i < both_good; ++i) r.pairs.push_back({true, true});
  for (int i = 0; i < only_b; ++i) r.pairs.push_back({false, true});
  for (int i = 0; i < only_a; ++i) r.pairs.push_back({true, false});
  for (int i = 0; i < neither; ++i) r.pairs.push_back({false, false});
  return r;
}

TEST(Gate, IdenticalOutcomesGiveAZeroWidthIntervalAtZero) {
  std::vector<PairedWorkload> w{{"w", {repeat_of(30, 0, 0, 2), repeat_of(29, 0, 0, 3)}}};
  const GoodputInterval g = bootstrap_goodput(w, 0.95, 1000, 7);
  EXPECT_EQ(g.pairs, 64u);
  EXPECT_EQ(g.a_good, 59);
  EXPECT_EQ(g.b_good, 59);
  EXPECT_EQ(g.gain, 0.0);
  EXPECT_EQ(g.ci_low, 0.0);
  EXPECT_EQ(g.ci_high, 0.0);
}

TEST(Gate, AConstantDifferenceIsItsOwnInterval) {
  // Every pair loses one good request: the mean difference is -1 in every
  // resample, and A's mean is 1, so the relative change is -100% exactly.
  std::vector<PairedWorkload> w{{"w", {repeat_of(0, 0, 10, 0), repeat_of(0, 0, 7, 0)}}};
  const GoodputInterval g = bootstrap_goodput(w, 0.9, 500, 1);
  EXPECT_EQ(g.gain, -1.0);
  EXPECT_DOUBLE_EQ(g.ci_low, -1.0);
  EXPECT_DOUBLE_EQ(g.ci_high, -1.0);
}

TEST(Gate, AGainInEveryRepeatMatchesTheNormalApproximation) {
  // Two identical repeats of 50 pairs: 40 good on both sides, 10 good on B
  // only. gain = (100 - 80) / 80 = 0.25. The mean difference is 0.2 with a
  // standard error sqrt(0.2 * 0.8 / 100) = 0.04 (the repeats are alike, so
  // drawing them adds nothing), so the 95% interval of the difference is
  // about 0.2 +- 1.96 * 0.04 = [0.122, 0.278], i.e. [0.152, 0.348] relative
  // to A's mean 0.8.
  std::vector<PairedWorkload> w{{"w", {repeat_of(40, 10, 0, 0), repeat_of(40, 10, 0, 0)}}};
  const GoodputInterval g = bootstrap_goodput(w, 0.95, 4000, 42);
  EXPECT_EQ(g.a_good, 80);
  EXPECT_EQ(g.b_good, 100);
  EXPECT_DOUBLE_EQ(g.gain, 0.25);
  EXPECT_NEAR(g.ci_low, 0.152, 0.025);
  EXPECT_NEAR(g.ci_high, 0.348, 0.025);
  EXPECT_TRUE(decide(g, {}, 0.0).promote);
}

TEST(Gate, AGainInOneRepeatOnlyDoesNotClearTheBar) {
  // Repeat 1: 20 of 50 requests good on B only; repeat 2: no difference.
  // Request-level resampling alone would put the interval well above 0
  // (0.2 +- 0.08 in difference); drawing repeats picks repeat 2 twice in a
  // quarter of the resamples, whose difference is exactly 0, and no resample
  // goes below 0, so the 2.5% quantile is 0.
  std::vector<PairedWorkload> w{{"w", {repeat_of(30, 20, 0, 0), repeat_of(50, 0, 0, 0)}}};
  const GoodputInterval g = bootstrap_goodput(w, 0.95, 2000, 3);
  EXPECT_DOUBLE_EQ(g.gain, 20.0 / 80.0);
  EXPECT_EQ(g.ci_low, 0.0);
  EXPECT_GT(g.ci_high, 0.2);
  const GateDecision d = decide(g, {}, 0.0);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("includes 0"), std::string::npos) << d.reason;
}

TEST(Gate, TheSameSeedGivesTheSameInterval) {
  std::vector<PairedWorkload> w{{"a", {repeat_of(20, 5, 3, 2), repeat_of(22, 4, 2, 2)}},
                                {"b", {repeat_of(10, 1, 1, 0), repeat_of(9, 2, 0, 1)}}};
  const GoodputInterval x = bootstrap_goodput(w, 0.95, 1000, 11);
  const GoodputInterval y = bootstrap_goodput(w, 0.95, 1000, 11);
  EXPECT_EQ(x.ci_low, y.ci_low);
  EXPECT_EQ(x.ci_high, y.ci_high);
  EXPECT_LT(x.ci_low, x.gain);
  EXPECT_GT(x.ci_high, x.gain);
}

TEST(Gate, FractionIntervalOfAllGoodIsOne) {
  const FractionInterval f = bootstrap_fraction({{{true, true, true}, {true, true}}}, 0.95, 200, 1);
  EXPECT_EQ(f.fraction, 1.0);
  EXPECT_EQ(f.ci_low, 1.0);
  EXPECT_EQ(f.ci_high, 1.0);
}

GoodputInterval interval(double gain, double lo, double hi) {
  GoodputInterval g;
  g.pairs = 100;
  g.a_good = 80;
  g.b_good = 90;
  g.gain = gain;
  g.ci_low = lo;
  g.ci_high = hi;
  g.confidence = 0.95;
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

TEST(Gate, PromotesWhenTheIntervalIsAboveZeroAndEverySliceWithinItsMargin) {
  const GateDecision d =
      decide(interval(0.125, 0.041, 0.203), {slice("chat", 10, 10, 1.0), slice("long", 8, 8, 0.9)}, 0);
  EXPECT_TRUE(d.promote);
  EXPECT_EQ(d.reason.rfind("promoted: goodput +12.5% CI [+4.1%, +20.3%] at 95% above 0", 0), 0u) << d.reason;
}

TEST(Gate, RejectsAnIntervalThatIncludesZeroWithItsNumbers) {
  const GateDecision d = decide(interval(0.008, -0.021, 0.034), {slice("chat", 10, 10, 1.0)}, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_EQ(d.reason, "rejected: goodput +0.8% CI [-2.1%, +3.4%] at 95% includes 0");
}

TEST(Gate, RejectsALossBelowZero) {
  const GateDecision d = decide(interval(-0.06, -0.1, -0.02), {}, 0);
  EXPECT_EQ(d.reason, "rejected: goodput -6.0% CI [-10.0%, -2.0%] at 95% below 0");
}

TEST(Gate, MinGainRaisesTheBar) {
  const GateDecision d = decide(interval(0.05, 0.01, 0.09), {}, 0.02);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("lower bound +1.0% not above min_gain +2.0%"), std::string::npos) << d.reason;
  EXPECT_TRUE(decide(interval(0.05, 0.03, 0.09), {}, 0.02).promote);
}

TEST(Gate, OneSliceBelowItsMarginRejectsWhilePooledLooksFine) {
  // Pooled: (19 + 7) / (20 + 10) = 0.87 >= 0.8; the long slice alone: 0.70 < 0.80.
  const GateDecision d =
      decide(interval(0.3, 0.2, 0.4), {slice("chat", 20, 19, 0.8), slice("long", 10, 7, 0.8)}, 0);
  EXPECT_FALSE(d.promote);
  ASSERT_EQ(d.failed_slices.size(), 1u);
  EXPECT_EQ(d.failed_slices[0], "long");
  EXPECT_EQ(d.reason.rfind("rejected: slice long verified 0.70 < margin 0.80 (7 of 10 exact)", 0), 0u)
      << d.reason;
  // The goodput verdict is still stated.
  EXPECT_NE(d.reason.find("goodput +30.0%"), std::string::npos);
}

TEST(Gate, FailingSlicesAreNamedWorstFirst) {
  const GateDecision d = decide(interval(0.3, 0.2, 0.4),
                                {slice("a", 10, 8, 0.9), slice("b", 10, 2, 0.9), slice("c", 10, 10, 0.9)}, 0);
  ASSERT_EQ(d.failed_slices.size(), 2u);
  EXPECT_EQ(d.failed_slices[0], "b");
  EXPECT_EQ(d.failed_slices[1], "a");
}

TEST(Gate, ASliceWithNothingComparedFails) {
  SliceQuality q = slice("rare", 0, 0, 0.5);
  q.requests = 4;
  const GateDecision d = decide(interval(0.3, 0.2, 0.4), {q}, 0);
  EXPECT_FALSE(d.promote);
  EXPECT_NE(d.reason.find("slice rare has no compared request (4 sent"), std::string::npos) << d.reason;
}

TEST(Gate, SignedPercent) {
  EXPECT_EQ(signed_percent(0.008), "+0.8%");
  EXPECT_EQ(signed_percent(-0.021), "-2.1%");
  EXPECT_EQ(signed_percent(-0.0001), "+0.0%");
  EXPECT_EQ(signed_percent(1.5), "+150.0%");
}

}  // namespace
}  // namespace ladder::climb
