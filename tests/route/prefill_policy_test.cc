// PrefillPolicy (conditional disaggregation) and its cost lines, against
// numbers worked out by hand.
#include "route/prefill_policy.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ladder::route
