// SpecController's decision against measured speed: the prediction proposes,
// the interleaved measurement of speculative and plain decode steps
// disposes. Synthetic costs, so every number below is set by the test.
#include "engine/spec_controller.h"

#include <gtest/gtest.h>

#include <vector>

namespace ladder::engine {
namespace {

// A controller whose cost model predicts that speculation pays: a forward
// pass costs the same for any number of tokens (flat, as on a machine whose
// step is all weight reads), drafting is nearly free, and every draft token
// so far was accepted. Then it is driven step by step; each step reports the
// outcome the test chooses for a speculative or a plain decode step.
struct Drive {
  int first_overruled = -1;  // the plan that first switched speculation off on the measurement
  int spec_steps = 0, plain_steps = 0;
  SpecPlan last;
};

Drive drive(double spec_step_us, double plain_step_us, int plans) {
  SpecController c(4, /*adaptive=*/true);
  for (int i = 0; i < 16; ++i) c.observe_forward(1 + i % 5, 10, 1000.0);  // flat: a slope of 0 is measured
  c.observe_draft(1, 10, 4, 40.0);
  for (int i = 0; i < SpecController::kWarmupCycles; ++i) c.observe_cycle(4, false);
  const std::vector<SpecCandidate> one{{0.95, 4, 10, 0}};
  Drive d;
  for (int i = 0; i < plans; ++i) {
    d.last = c.plan(one, 0, 0);
    const bool spec = d.last.on[0];
    if (d.last.overruled && d.first_overruled < 0) d.first_overruled = i;
    c.observe_forward(spec ? 5 : 1, 10, 1000.0);
    // A speculative step emits 5 tokens (all 4 accepted + 1), a plain one 1.
    c.observe_outcome(spec, 1, spec ? 5 : 1, spec ? spec_step_us : plain_step_us);
    (spec ? d.spec_steps : d.plain_steps) += 1;
  }
  return d;
}

TEST(SpecController, AMeasuredLossOverrulesAGoodPrediction) {
  // Predicted: ~5 tokens for one forward pass. Measured: a speculative step
  // takes 10 ms for its 5 tokens (0.5 per ms), a plain one 1 ms for 1: a
  // measured gain of 0.5.
  const Drive d = drive(10000, 1000, 200);
  ASSERT_GE(d.first_overruled, 0) << "the measurement never switched speculation off";
  // Known after 8 speculative and 4 plain steps, with a plain probe every
  // 8th plan until then: off within kWarmupCycles + 4 * 8 plans.
  EXPECT_LE(d.first_overruled, SpecController::kWarmupCycles + 4 * SpecController::kEarlyPlainProbeEvery);
  EXPECT_GT(d.last.predicted_gain, 1.5) << "the cost model still predicts a win";
  EXPECT_TRUE(d.last.overruled);
  EXPECT_FALSE(d.last.on[0]);
  EXPECT_NEAR(d.last.measured_gain, 0.5, 1e-9);
  EXPECT_GT(d.plain_steps, 150);
}

TEST(SpecController, AMeasuredWinKeepsSpeculating) {
  // 5 tokens in 2 ms against 1 token in 1 ms: a measured gain of 2.5. Once
  // known, plain probes come every 32nd speculative plan.
  const Drive d = drive(2000, 1000, 200);
  EXPECT_LT(d.first_overruled, 0);
  EXPECT_TRUE(d.last.on[0] || d.last.probing);
  EXPECT_NEAR(d.last.measured_gain, 2.5, 1e-9);
  EXPECT_GT(d.spec_steps, 180);
  EXPECT_LT(d.plain_steps, 4 + 200 / SpecController::kPlainProbeEvery + 2);
}

TEST(SpecController, MeasuredGainIsUnknownUntilBothSidesHaveSamples) {
  MeasuredGain g;
  for (int i = 0; i < 20; ++i) g.add(true, 2, 10, 1000);
  EXPECT_FALSE(g.known(2));
  EXPECT_EQ(g.gain(2), 1.0);
  for (int i = 0; i < 3; ++i) g.add(false, 2, 2, 1000);
  EXPECT_FALSE(g.known(2));
  g.add(false, 2, 2, 1000);
  EXPECT_TRUE(g.known(2));
  EXPECT_TRUE(g.known(3));             // the same power of two
  EXPECT_NEAR(g.gain(3), 5.0, 1e-9);  // 5 tokens per sequence per ms against 1
  g.add(false, 0, 2, 1000);            // no sequence: ignored
  g.add(false, 2, 2, 0);               // no time: ignored
  EXPECT_NEAR(g.gain(2), 5.0, 1e-9);
}

// What speculation gained at batch 1 says nothing about batch 16: each batch
// size (power of two) has its own measurement, and a loss measured at 16 is
// seen there however large the gain at 1 was.
TEST(SpecController, MeasuredGainIsKeptPerBatchSize) {
  MeasuredGain g;
  for (int i = 0; i < 40; ++i) {
    g.add(true, 1, 4, 1000);   // batch 1: 4 tokens a ms
    g.add(false, 1, 1, 1000);  // against 1
  }
  EXPECT_NEAR(g.gain(1), 4.0, 1e-9);
  EXPECT_FALSE(g.known(16));
  EXPECT_FALSE(g.known(2));
  for (int i = 0; i < 8; ++i) {
    g.add(true, 16, 32, 4000);  // batch 16: 2 tokens per sequence in 4 ms
    g.add(false, 16, 16, 1000); // against 1 in 1 ms
  }
  EXPECT_TRUE(g.known(16));
  EXPECT_TRUE(g.known(31));
  EXPECT_NEAR(g.gain(16), 0.5, 1e-9);
  EXPECT_NEAR(g.gain(1), 4.0, 1e-9);
  EXPECT_FALSE(g.known(32));
  EXPECT_FALSE(g.known(1 << 20));
}

}  // namespace
}  // namespace ladder::engine
