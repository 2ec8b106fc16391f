// Percentiles, SLO verdicts, goodput and the sweep on hand-made samples with
// hand-computed answers.
#include "harness/stats.h"

#include <gtest/gtest.h>

namespace ladder::harness {
namespace {

TEST(Stats, PercentilesByLinearInterpolation) {
  // Sorted 10, 20, 30, 40, 50: rank = p/100 * 4.
  std::vector<double> v{50, 10, 40, 20, 30};
  Distribution d = summarize(v);
  EXPECT_EQ(d.count, 5u);
  EXPECT_DOUBLE_EQ(d.mean, 30);
  EXPECT_DOUBLE_EQ(d.p50, 30);    // rank 2
  EXPECT_DOUBLE_EQ(d.p90, 46);    // rank 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(d.p95, 48);    // rank 3.8
  EXPECT_DOUBLE_EQ(d.p99, 49.6);  // rank 3.96
  EXPECT_DOUBLE_EQ(d.max, 50);
  Distribution one = summarize({7});
  EXPECT_DOUBLE_EQ(one.p99, 7);
  EXPECT_EQ(summarize({}).count, 0u);
}

RequestResult done(const std::string& tenant, const std::string& slice, double ttft, double e2e, int64_t out) {
  RequestResult r;
  r.tenant = tenant;
  r.slice = slice;
  r.http_status = 200;
  r.finish_reason = "length";
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.output_tokens = out;
  if (out >= 2) r.tpot_ms = (e2e - ttft) / static_cast<double>(out - 1);
  verify_result(r, std::nullopt);
  return r;
}

TEST(Stats, SloVerdictsPerMetric) {
  RequestResult r = done("a", "chat", 100, 1000, 11);  // TPOT = 900 / 10 = 90
  r.slo.ttft_ms = 100;                                 // met at equality
  r.slo.tpot_ms = 89;                                  // missed
  EXPECT_TRUE(check_slo(r).ttft);
  EXPECT_FALSE(check_slo(r).tpot);
  EXPECT_FALSE(is_good(r));
  r.slo.tpot_ms = 90;
  r.slo.e2e_ms = 999;
  EXPECT_TRUE(check_slo(r).tpot);
  EXPECT_FALSE(check_slo(r).e2e);
  // One output token: no TPOT, so a TPOT SLO cannot be missed...
  RequestResult one = done("a", "chat", 10, 10, 1);
  one.slo.tpot_ms = 1;
  EXPECT_TRUE(is_good(one));
  // ...but without usage it cannot be shown met.
  one.output_tokens = -1;
  EXPECT_FALSE(is_good(one));
  // No first token: a TTFT SLO fails.
  RequestResult failed;
  failed.slo.ttft_ms = 1e9;
  EXPECT_FALSE(check_slo(failed).ttft);
}

TEST(Stats, VerificationRules) {
  RequestResult r = done("a", "s", 1, 2, 3);
  r.text = "  The answer is 42.\n";
  verify_result(r, Expectation{Expectation::Kind::kSubstring, "42"});
  EXPECT_TRUE(r.verified);
  verify_result(r, Expectation{Expectation::Kind::kExact, "The answer is 42."});
  EXPECT_TRUE(r.verified);  // exact after trimming whitespace
  verify_result(r, Expectation{Expectation::Kind::kExact, "The answer is 42"});
  EXPECT_FALSE(r.verified);
  r.finish_reason = "abort";
  verify_result(r, std::nullopt);
  EXPECT_FALSE(r.verified);
  r.finish_reason = "stop";
  r.http_status = 429;
  verify_result(r, std::nullopt);
  EXPECT_FALSE(r.verified);
}

TEST(Stats, GoodputOverallPerTenantPerSlice) {
  std::vector<RequestResult> rs;
  rs.push_back(done("a", "chat", 50, 500, 10));    // good
  rs.push_back(done("a", "chat", 250, 900, 10));   // TTFT missed
  rs.push_back(done("b", "agent", 80, 300, 5));    // good
  rs.push_back(done("b", "chat", 90, 2500, 10));   // E2E missed
  RequestResult bad = done("b", "agent", 20, 100, 3);
  bad.text = "nope";
  verify_result(bad, Expectation{Expectation::Kind::kSubstring, "yes"});  // within SLO, not verified
  rs.push_back(bad);
  for (auto& r : rs) {
    r.slo.ttft_ms = 200;
    r.slo.e2e_ms = 2000;
  }
  RunSummary s = summarize_run(rs, 10.0);
  EXPECT_EQ(s.overall.requests, 5u);
  EXPECT_EQ(s.overall.verified, 4u);
  EXPECT_EQ(s.overall.slo_met, 3u);
  EXPECT_EQ(s.overall.good, 2u);
  EXPECT_DOUBLE_EQ(s.overall.goodput_rps, 0.2);
  EXPECT_DOUBLE_EQ(s.overall.goodput_fraction, 0.4);
  EXPECT_EQ(s.overall.output_tokens, 38);
  EXPECT_DOUBLE_EQ(s.overall.output_tokens_per_s, 3.8);
  EXPECT_EQ(s.by_tenant.at("a").good, 1u);
  EXPECT_EQ(s.by_tenant.at("b").good, 1u);
  EXPECT_DOUBLE_EQ(s.by_tenant.at("b").goodput_fraction, 1.0 / 3.0);
  EXPECT_EQ(s.by_slice.at("chat").good, 1u);
  EXPECT_EQ(s.by_slice.at("agent").good, 1u);
  EXPECT_EQ(s.by_slice.at("agent").requests, 2u);
  // Tenants and slices each partition the total.
  size_t req = 0, good = 0;
  double rps = 0;
  for (const auto& [k, g] : s.by_tenant) {
    req += g.requests;
    good += g.good;
    rps += g.goodput_rps;
  }
  EXPECT_EQ(req, s.overall.requests);
  EXPECT_EQ(good, s.overall.good);
  EXPECT_DOUBLE_EQ(rps, s.overall.goodput_rps);
  // TTFT p50 over 20, 50, 80, 90, 250 -> 80.
  EXPECT_DOUBLE_EQ(s.overall.ttft_ms.p50, 80);
}

TEST(Stats, SweepFindsTheHighestRateThatHoldsTheTarget) {
  // Attainment 1.0, 0.95, 0.85, 0.92 at 1, 2, 4, 8: the pass at 8 comes after a failure.
  std::vector<SweepPoint> pts{{8, 0.92, 0}, {1, 1.0, 0}, {4, 0.85, 0}, {2, 0.95, 0}};
  SweepVerdict v = find_max_goodput_rate(pts, 0.9);
  ASSERT_TRUE(v.max_rate.has_value());
  EXPECT_DOUBLE_EQ(*v.max_rate, 2);
  // Crossing between (2, 0.95) and (4, 0.85): 2 + (0.05 / 0.10) * 2 = 3.
  EXPECT_DOUBLE_EQ(*v.interpolated_rate, 3);
  SweepVerdict none = find_max_goodput_rate({{1, 0.5, 0}, {2, 0.4, 0}}, 0.9);
  EXPECT_FALSE(none.max_rate.has_value());
  EXPECT_FALSE(none.interpolated_rate.has_value());
  EXPECT_TRUE(v.limit_found);
  EXPECT_NE(v.statement().find("measured 2"), std::string::npos) << v.statement();
  EXPECT_FALSE(none.limit_found);
  EXPECT_NE(none.statement().find("not met at any swept rate (lowest 1"), std::string::npos) << none.statement();
  // Every rate met the target: the limit is above the highest, not at it.
  SweepVerdict all = find_max_goodput_rate({{1, 1, 0}, {3, 0.9, 0}}, 0.9);
  EXPECT_DOUBLE_EQ(*all.max_rate, 3);
  EXPECT_FALSE(all.limit_found);
  EXPECT_FALSE(all.interpolated_rate.has_value());
  EXPECT_EQ(all.statement(), "not reached below 3 arrivals/s (the highest swept rate still met the target)");
}

}  // namespace
}  // namespace ladder::harness
