// Reading a replay back: verification under the policy's margins, pairing by
// request key, per-slice quality and a configuration's own figures.
#include "ladder/measurement.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_support.h"

namespace ladder::climb {
namespace {

using nlohmann::json;

ClimbPolicy policy_with(harness::VerifyMode default_mode, const std::map<std::string, SliceMargin>& slices) {
  ClimbPolicy p;
  p.default_margin.verify = default_mode;
  p.slice_margins = slices;
  return p;
}

json row(const std::string& key, const std::string& slice, bool verified, bool good,
         std::optional<bool> exact, double e2e) {
  json j = {{"key", key},   {"slice", slice}, {"verified", verified},
            {"good", good}, {"e2e_ms", e2e},  {"ttft_ms", e2e / 2}};
  if (exact) j["quality"] = {{"exact_match", *exact}, {"pass", verified}};
  return j;
}

std::string write_replay(const std::vector<json>& rows, double window_s, double core_s) {
  static int n = 0;
  const std::string dir = ladder::testing::temp_dir() + "/replay" + std::to_string(n++);
  std::filesystem::create_directories(dir);
  json run = json::object();
  run["summary"] = {{"window_s", window_s}};
  run["cost"] = {{"server_core_s", core_s}};
  json record = json::object();
  record["configuration"] = {{"fingerprint_sha256", "fp"}};
  record["runs"] = json::array({run});
  std::ofstream(dir + "/record.json") << record.dump();
  std::ofstream out(dir + "/requests.jsonl");
  for (const auto& r : rows) out << r.dump() << "\n";
  return dir;
}

TEST(Measurement, AnExactSliceInAnApproxReplayNeedsTheExactTokens) {
  // "long" is approximate, so the replay ran in approx mode; "chat" is exact:
  // a request the harness passed on thresholds but whose tokens differ is not
  // verified for it.
  const ClimbPolicy p =
      policy_with(harness::VerifyMode::kExact, {{"long", {harness::VerifyMode::kApprox, 0.9}}});
  ASSERT_EQ(p.replay_mode(), harness::VerifyMode::kApprox);
  const std::string dir = write_replay(
      {row("k1", "chat", true, true, true, 10), row("k2", "chat", true, true, false, 20),
       row("k3", "long", true, true, false, 30), row("k4", "long", false, false, std::nullopt, 40)},
      2.0, 0.5);
  auto m = read_measurement(dir, p);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  ASSERT_EQ(m->requests.size(), 4u);
  EXPECT_TRUE(m->requests[0].verified);
  EXPECT_FALSE(m->requests[1].verified);
  EXPECT_FALSE(m->requests[1].good);
  EXPECT_TRUE(m->requests[2].verified);  // approx slice: the harness's verdict
  EXPECT_FALSE(m->requests[3].compared);
  EXPECT_EQ(m->good(), 2u);
  EXPECT_EQ(m->window_s(), 2.0);
  EXPECT_EQ(m->server_core_s(), 0.5);
  EXPECT_EQ(m->fingerprint(), "fp");

  const auto q = slice_quality({&*m}, p);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].slice, "chat");
  EXPECT_EQ(q[0].compared, 2u);
  EXPECT_EQ(q[0].verified, 1u);
  EXPECT_EQ(q[0].verify, "exact");
  EXPECT_EQ(q[1].slice, "long");
  EXPECT_EQ(q[1].requests, 2u);
  EXPECT_EQ(q[1].compared, 1u);
  EXPECT_EQ(q[1].margin, 0.9);

  const RungFigures f = rung_figures({&*m}, p);
  EXPECT_EQ(f.requests, 4u);
  EXPECT_EQ(f.good, 2u);
  EXPECT_EQ(f.verified, 2u);
  EXPECT_DOUBLE_EQ(f.goodput_rps, 1.0);                   // 2 good / 2 s
  EXPECT_DOUBLE_EQ(*f.core_s_per_verified, 0.25);         // 0.5 core-s / 2 verified
  EXPECT_DOUBLE_EQ(f.e2e_ms["p50"].get<double>(), 25.0);  // between 20 and 30
  EXPECT_DOUBLE_EQ(f.goodput_fraction.fraction, 0.5);
}

TEST(Measurement, PairsByKeyAndDropsTheUnpaired) {
  const ClimbPolicy p = policy_with(harness::VerifyMode::kExact, {});
  auto a =
      read_measurement(write_replay({row("x", "s", true, true, true, 1), row("y", "s", true, false, true, 1),
                                     row("only-a", "s", true, true, true, 1)},
                                    1, 1),
                       p);
  auto b = read_measurement(
      write_replay({row("y", "s", true, true, true, 1), row("x", "s", true, true, true, 1)}, 1, 1), p);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const PairedRepeat r = pair_by_key(*a, *b);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_TRUE(r.pairs[0].a_good && r.pairs[0].b_good);   // x
  EXPECT_TRUE(!r.pairs[1].a_good && r.pairs[1].b_good);  // y
}

TEST(Measurement, AMissingRecordIsAnError) {
  auto m = read_measurement(ladder::testing::temp_dir() + "/nothing-here",
                            policy_with(harness::VerifyMode::kExact, {}));
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("record.json"), std::string::npos);
}

}  // namespace
}  // namespace ladder::climb
