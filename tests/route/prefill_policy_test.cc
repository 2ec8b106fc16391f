// PrefillPolicy (conditional disaggregation) and its cost lines, against
// numbers worked out by hand.
#include "route/prefill_policy.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ladder::route {
namespace {

TEST(DecayingLine, FitsALineExactlyAndForgetsOldPoints) {
  DecayingLine plain(1.0);
  EXPECT_FALSE(plain.mean());
  plain.add(0, 1);
  EXPECT_EQ(*plain.mean(), 1);
  EXPECT_FALSE(plain.slope());  // one x: no slope yet
  plain.add(10, 21);
  plain.add(20, 41);
  EXPECT_DOUBLE_EQ(*plain.slope(), 2);
  EXPECT_DOUBLE_EQ(*plain.at(5), 11);

  // Points on one line fit it whatever their weights; after the cost moves
  // (y = 5 + 1 x from here on) the decayed fit follows the new points.
  DecayingLine recent(0.5);
  for (int i = 0; i < 4; ++i) recent.add(10.0 * i, 1 + 2 * 10.0 * i);
  EXPECT_NEAR(*recent.at(100), 201, 1e-9);
  for (int i = 0; i < 40; ++i) recent.add(10.0 * (i % 4), 5 + 10.0 * (i % 4));
  EXPECT_NEAR(*recent.slope(), 1, 1e-6);
  EXPECT_NEAR(*recent.at(0), 5, 1e-5);

  DecayingLine flat(1.0);
  flat.add(7, 3);
  flat.add(7, 5);
  EXPECT_FALSE(flat.slope());  // every x the same
  EXPECT_DOUBLE_EQ(*flat.mean(), 4);
}

TEST(PrefillPolicy, RulesBeforeCosts) {
  PrefillPolicy p;
  EXPECT_STREQ(p.decide(0, 0, 0, true, 0).reason, "cached");
  EXPECT_EQ(p.decide(0, 0, 0, true, 0).where, PrefillWhere::kLocal);
  EXPECT_STREQ(p.decide(64, 64, 0, false, 0).reason, "no_prefill_worker");
  EXPECT_STREQ(p.decide(64, 64, 0, true, 1).reason, "prefill_busy");
  EXPECT_EQ(p.decide(64, 64, 0, true, 1).where, PrefillWhere::kLocal);

  PrefillPolicy always(PrefillMode::kAlways);
  EXPECT_EQ(always.decide(64, 64, 0, true, 1).where, PrefillWhere::kRemote);  // queues at a busy prefill worker
  EXPECT_STREQ(always.decide(64, 64, 0, true, 1).reason, "policy_always");
  EXPECT_EQ(always.decide(0, 0, 0, true, 0).where, PrefillWhere::kLocal);  // nothing to send
  PrefillPolicy never(PrefillMode::kNever);
  EXPECT_EQ(never.decide(64, 64, 3, true, 0).where, PrefillWhere::kLocal);
  EXPECT_STREQ(never.decide(64, 64, 3, true, 0).reason, "policy_never");
}

TEST(PrefillPolicy, ExploresBothPathsThenComparesMeasuredCosts) {
  PrefillPolicy p;
  // No samples: the path with fewer is taken, remote first.
  EXPECT_EQ(p.decide(64, 64, 0, true, 0).where, PrefillWhere::kRemote);
  EXPECT_STREQ(p.decide(64, 64, 0, true, 0).reason, "exploring");
  p.observe_remote(64, 56.4);
  EXPECT_EQ(p.decide(64, 64, 0, true, 0).where, PrefillWhere::kLocal);
  // remote(n) = 50 + 0.1 n ms; local(n) = 0.5 n ms.
  for (int n : {32, 96, 160}) p.observe_remote(n, 50 + 0.1 * n);
  for (int n : {32, 64, 96, 160}) p.observe_local(n, 0.5 * n);
  ASSERT_TRUE(p.threshold_tokens().has_value());
  EXPECT_NEAR(*p.threshold_tokens(), 50 / 0.4, 1e-9);  // 125 tokens

  // An idle decode worker: remote pays from 125 uncached tokens.
  EXPECT_EQ(p.decide(100, 100, 0, true, 0).where, PrefillWhere::kLocal);  // 60 ms vs 50
  EXPECT_STREQ(p.decide(100, 100, 0, true, 0).reason, "cheaper_local");
  EXPECT_EQ(p.decide(200, 200, 0, true, 0).where, PrefillWhere::kRemote);  // 70 ms vs 100
  EXPECT_STREQ(p.decide(200, 200, 0, true, 0).reason, "cheaper_remote");
  // One more request running there: local prefill delays it too (2 x 50 ms).
  EXPECT_EQ(p.decide(100, 100, 1, true, 0).where, PrefillWhere::kRemote);
  // A chat turn: 100 new tokens for the decode worker, but the prefill
  // worker lacks the whole 1,000-token history: 150 ms remote vs 50 local.
  EXPECT_EQ(p.decide(100, 1000, 0, true, 0).where, PrefillWhere::kLocal);
  // A busy prefill worker: one prompt in flight there costs about the mean
  // remote time (the mean of what it measured: ~59 ms) before this one starts.
  // 200 tokens: 70 + 59 ms remote vs 100 local: the queue makes it local,
  // counted as prefill_busy; with one request running on the decode worker
  // (2 x 100 ms) it still goes remote; 1,000 tokens: 150 + 59 vs 500.
  EXPECT_EQ(p.decide(200, 200, 0, true, 1).where, PrefillWhere::kLocal);
  EXPECT_STREQ(p.decide(200, 200, 0, true, 1).reason, "prefill_busy");
  EXPECT_EQ(p.decide(200, 200, 1, true, 1).where, PrefillWhere::kRemote);
  EXPECT_EQ(p.decide(1000, 1000, 0, true, 1).where, PrefillWhere::kRemote);
  EXPECT_EQ(p.decide(1000, 1000, 0, true, 8).where, PrefillWhere::kLocal);  // 150 + 8 x 59 vs 500
  EXPECT_STREQ(p.decide(100, 100, 0, true, 1).reason, "cheaper_local");    // local even when idle
  // A remote path dearer at every length never pays.
  PrefillPolicy q;
  for (int n : {32, 64, 96, 160}) q.observe_remote(n, 50 + 0.6 * n);
  for (int n : {32, 64, 96, 160}) q.observe_local(n, 0.5 * n);
  EXPECT_FALSE(q.threshold_tokens());
  EXPECT_EQ(q.decide(4096, 4096, 0, true, 0).where, PrefillWhere::kLocal);
}

TEST(ArrivalRate, ReadsASteadyRateAndDecaysWhenQuiet) {
  ArrivalRate r(10);
  EXPECT_EQ(r.per_second(0), 0);
  // 2 per second for 100 s (10 time constants): halfway between two
  // arrivals it reads 2 within 0.1% (a sawtooth: 2.05 just after one, 1.95
  // just before the next).
  for (int i = 0; i <= 200; ++i) r.arrive(i * 0.5);
  EXPECT_NEAR(r.per_second(100.25), 2, 0.002);
  EXPECT_NEAR(r.per_second(100), 0.1 / (1 - std::exp(-0.05)), 1e-3);
  // 10 s of quiet: down by e.
  EXPECT_NEAR(r.per_second(110), r.per_second(100) / std::exp(1.0), 1e-9);
  EXPECT_LT(r.per_second(200), 0.001);
}

// remote(n) = 50 + 0.1 n ms; local(n) = 0.5 n ms, as above.
PrefillPolicy measured_policy(double tpot_ms) {
  PrefillPolicy p(PrefillMode::kMeasured, tpot_ms);
  for (int n : {32, 96, 160, 224}) p.observe_remote(n, 50 + 0.1 * n);
  for (int n : {32, 64, 96, 160}) p.observe_local(n, 0.5 * n);
  return p;
}

TEST(PrefillPolicy, TpotObjectiveSendsPromptsWhoseStepsWouldStallDecoding) {
  // 100 uncached tokens: local 50 ms, remote 60 ms: cheaper local by cost.
  const PrefillPolicy none = measured_policy(0);
  EXPECT_STREQ(none.decide(100, 100, 1, true, 0).reason, "cheaper_remote");  // 60 vs 2 x 50
  EXPECT_STREQ(none.decide(100, 100, 0, true, 0, {0, 5.0}).reason, "cheaper_local");

  // Objective 40 ms: a 100-token step (50 ms) would break it for whoever
  // decodes beside it.
  const PrefillPolicy tight = measured_policy(40);
  // Nobody decoding, nobody arriving: the cost rule.
  EXPECT_STREQ(tight.decide(100, 100, 0, true, 0).reason, "cheaper_local");
  // One running: remote, even at a busy prefill worker (the cost rule would
  // keep it local there: 60 + 2 x ~63 ms vs 100).
  EXPECT_EQ(tight.decide(100, 100, 1, true, 2).where, PrefillWhere::kRemote);
  EXPECT_STREQ(tight.decide(100, 100, 1, true, 2).reason, "tpot_slo");
  // Nobody running, 1 arrival/s: the chance of one during the 50 ms
  // prefill is 1 - e^-0.05 = 4.9% > 1%: remote. At 0.1/s it is 0.5%: local.
  EXPECT_STREQ(tight.decide(100, 100, 0, true, 0, {0, 1.0}).reason, "tpot_slo");
  EXPECT_STREQ(tight.decide(100, 100, 0, true, 0, {0, 0.1}).reason, "cheaper_local");
  // A 64-token chunk: each step costs 32 ms, inside 40: the cost rule
  // decides (local 50 vs remote 60 when idle).
  EXPECT_STREQ(tight.decide(100, 100, 0, true, 0, {64, 1.0}).reason, "cheaper_local");
  // ... but a 1,000-token prompt in 64-token chunks still steps at 32 ms:
  // the cost rule (500 ms local vs 150 remote) sends it remote.
  EXPECT_STREQ(tight.decide(1000, 1000, 0, true, 0, {64, 1.0}).reason, "cheaper_remote");
  // An objective looser than any step leaves every decision to the costs.
  const PrefillPolicy loose = measured_policy(1000);
  EXPECT_STREQ(loose.decide(100, 100, 0, true, 0, {0, 50.0}).reason, "cheaper_local");
  // Cached prompts and the fixed modes come first, objective or not.
  EXPECT_STREQ(tight.decide(0, 0, 3, true, 0, {0, 9.0}).reason, "cached");
  EXPECT_STREQ(PrefillPolicy(PrefillMode::kNever, 1).decide(100, 100, 3, true, 0).reason, "policy_never");
}

}  // namespace
}  // namespace ladder::route
