// The shadow's rollback rule (ladder/shadow_evidence.h): its look schedule,
// that it rolls back quickly when a slice is far below its margin, never
// when every request verifies, and -- measured on simulated bursty traffic
// whose true verified fraction sits exactly at the margin -- that it rolls
// back no more often than its error rate allows.
#include "ladder/shadow_evidence.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <random>

namespace ladder::climb {
namespace {

ShadowRules rules(double margin, double confidence = 0.95) {
  ShadowRules r;
  r.default_margin = {harness::VerifyMode::kExact, margin};
  r.confidence = confidence;
  return r;
}

ShadowOutcome outcome(bool verified, int i, const std::string& slice = "chat") {
  return {slice, verified, "req-" + std::to_string(i), verified ? "" : "diverged at 3"};
}

TEST(ShadowEvidence, LooksComeAtEightTwelveSixteenWindowsAndTheirSharesSumToAlpha) {
  EXPECT_EQ(shadow_look_windows(1), 8);
  EXPECT_EQ(shadow_look_windows(2), 12);
  EXPECT_EQ(shadow_look_windows(3), 16);
  EXPECT_EQ(shadow_look_windows(4), 24);
  EXPECT_EQ(shadow_look_windows(9), 128);
  double sum = 0;
  for (int j = 1; j <= 100000; ++j) sum += shadow_look_alpha(0.025, j);
  EXPECT_LT(sum, 0.025);
  EXPECT_GT(sum, 0.0249);
}

TEST(ShadowEvidence, EveryRequestVerifiedNeverRollsBack) {
  ShadowEvidence e(rules(1.0));
  for (int i = 0; i < 5000; ++i) ASSERT_FALSE(e.record(outcome(true, i)).has_value()) << i;
  const auto st = e.standings();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].shadowed, 5000);
  EXPECT_EQ(st[0].verified, 5000);
  EXPECT_DOUBLE_EQ(st[0].upper, 1.0);
  EXPECT_GT(st[0].looks, 8);
}

TEST(ShadowEvidence, ASliceFarBelowItsMarginRollsBackAtTheFirstLookNamingItsFailures) {
  ShadowEvidence e(rules(0.9));
  std::optional<SliceStanding> fired;
  int at = 0;
  for (int i = 0; i < 200 && !fired; ++i) {
    // Other slices are judged on their own.
    EXPECT_FALSE(e.record(outcome(true, i, "chat")).has_value());
    fired = e.record(outcome(i % 5 == 0, i, "long_context"));  // 20% verify
    at = i + 1;
  }
  ASSERT_TRUE(fired.has_value());
  EXPECT_EQ(at, 8 * ShadowEvidence::kWindow);
  EXPECT_EQ(fired->slice, "long_context");
  EXPECT_TRUE(fired->below_margin);
  EXPECT_LT(fired->upper, 0.9);
  EXPECT_NEAR(fired->fraction, 0.2, 0.05);
  ASSERT_EQ(fired->first_failures.size(), ShadowEvidence::kKeptFailures);
  EXPECT_EQ(fired->first_failures[0].request_id, "req-1");
  // Once below, it does not fire again.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(e.record(outcome(false, 1000 + i, "long_context")).has_value());
}

TEST(ShadowEvidence, ASliceJustBelowItsMarginIsFoundGivenEnoughRequests) {
  // True fraction 0.85 against a margin of 0.95.
  std::mt19937_64 rng(7);
  std::bernoulli_distribution ok(0.85);
  ShadowEvidence e(rules(0.95));
  int at = 0;
  for (int i = 0; i < 2000; ++i) {
    if (e.record(outcome(ok(rng), i))) {
      at = i + 1;
      break;
    }
  }
  EXPECT_GT(at, 0);
  EXPECT_LE(at, 400);
}

// Bursty traffic: each window of requests shares a verified probability
// drawn around the true fraction (a Beta with the given mean), as requests
// of one burst share their kind of prompt.
double false_rollback_rate(double margin, double concentration, int streams, int requests, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> ga(margin * concentration, 1.0);
  std::gamma_distribution<double> gb((1 - margin) * concentration, 1.0);
  int rolled = 0;
  for (int s = 0; s < streams; ++s) {
    ShadowEvidence e(rules(margin));
    double p = margin;
    bool fired = false;
    for (int i = 0; i < requests && !fired; ++i) {
      if (i % ShadowEvidence::kWindow == 0) {
        const double a = ga(rng), b = gb(rng);
        p = a / (a + b);
      }
      fired = e.record(outcome(std::bernoulli_distribution(p)(rng), i)).has_value();
    }
    rolled += fired ? 1 : 0;
  }
  return static_cast<double>(rolled) / streams;
}

TEST(ShadowEvidence, AtTheMarginFalseRollbacksStayWithinTheErrorRateOnBurstyTraffic) {
  // alpha = (1 - 0.95) / 2 = 0.025 over every look of 2,000 requests; 1,000
  // simulated servers each, so a true rate of 0.025 exceeds 0.04 by chance
  // with probability ~0.1%.
  for (double margin : {0.8, 0.9, 0.95}) {
    for (double concentration : {4.0, 40.0, 1e6}) {  // strongly bursty .. independent
      const double rate = false_rollback_rate(margin, concentration, 1000, 2000, 11);
      std::printf("margin %.2f, burst concentration %g: false rollbacks in %.1f%% of 1000 simulated servers\n",
                  margin, concentration, 100 * rate);
      EXPECT_LE(rate, 0.04) << "margin " << margin << ", concentration " << concentration;
    }
  }
}

TEST(ShadowEvidence, RulesComeFromTheLedgerEntrysMargin) {
  const nlohmann::json margin = {
      {"default", {{"verify", "exact"}, {"margin", 1.0}}},
      {"slices", {{"long_context", {{"verify", "approx"}, {"margin", 0.9}}}}},
      {"approx_thresholds",
       {{"default", {{"min_match", 0.8}, {"min_divergence", nullptr}, {"max_mean_kl", 0.05}, {"max_kl", nullptr}}},
        {"slices", {{"long_context", {{"min_match", 0.7}, {"min_divergence", 16}}}}}}},
      {"confidence", 0.99}};
  auto r = ShadowRules::from_ledger_margin(margin);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->margin_for("chat").verify, harness::VerifyMode::kExact);
  EXPECT_EQ(r->margin_for("long_context").verify, harness::VerifyMode::kApprox);
  EXPECT_DOUBLE_EQ(r->margin_for("long_context").margin, 0.9);
  EXPECT_DOUBLE_EQ(*r->thresholds.for_slice("long_context").min_match, 0.7);
  EXPECT_EQ(*r->thresholds.for_slice("long_context").min_divergence, 16);
  EXPECT_DOUBLE_EQ(*r->thresholds.for_slice("chat").min_match, 0.8);
  EXPECT_DOUBLE_EQ(r->confidence, 0.99);
  EXPECT_FALSE(ShadowRules::from_ledger_margin(nlohmann::json::object()).is_ok());
  EXPECT_FALSE(ShadowRules::from_ledger_margin({{"default", {{"verify", "exact"}, {"margin", 2}}}}).is_ok());
  EXPECT_FALSE(ShadowRules::from_ledger_margin({{"default", {{"verify", "maybe"}, {"margin", 1}}}}).is_ok());
}

}  // namespace
}  // namespace ladder::climb
