// The numbers that count only verified work: outcomes (good, late,
// unverified, rejected early, expired, errors), verified-completion latency,
// speculative acceptance, cost per verified task, and the automatic sweep's
// search for the max goodput rate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/cost.h"
#include "harness/record.h"
#include "harness/stats.h"
#include "harness/sweep.h"

namespace ladder::harness {
namespace {

RequestResult finished(double e2e, bool verified, std::optional<double> slo_e2e = std::nullopt) {
  RequestResult r;
  r.http_status = 200;
  r.finish_reason = "stop";
  r.e2e_ms = e2e;
  r.ttft_ms = 1;
  r.output_tokens = 10;
  r.prompt_tokens = 100;
  r.verified = verified;
  r.slo.e2e_ms = slo_e2e;
  return r;
}

RequestResult http_error(int status, const std::string& code) {
  RequestResult r;
  r.http_status = status;
  r.error = "refused: " + code;
  r.error_code = code;
  return r;
}

TEST(Outcomes, EveryRequestHasExactlyOne) {
  EXPECT_EQ(outcome_of(finished(10, true)), Outcome::kGood);
  EXPECT_EQ(outcome_of(finished(10, true, 5.0)), Outcome::kLate);
  EXPECT_EQ(outcome_of(finished(10, false)), Outcome::kUnverified);
  for (const char* code : {"deadline_infeasible", "queue_full", "tenant_queue_full", "rate_limited"}) {
    EXPECT_EQ(outcome_of(http_error(429, code)), Outcome::kRejectedEarly) << code;
  }
  EXPECT_EQ(outcome_of(http_error(429, "deadline_exceeded")), Outcome::kExpired);
  EXPECT_EQ(outcome_of(http_error(400, "context_length_exceeded")), Outcome::kError);
  EXPECT_EQ(outcome_of(http_error(0, "")), Outcome::kError);
  RequestResult broken = finished(10, false);
  broken.error = "stream ended early";
  EXPECT_EQ(outcome_of(broken), Outcome::kError);

  std::vector<RequestResult> rs{finished(10, true),         finished(20, true),           finished(30, true, 25.0),
                                finished(40, false),        http_error(429, "queue_full"), http_error(429, "deadline_exceeded"),
                                http_error(500, "internal")};
  RunSummary s = summarize_run(rs, 1.0);
  const GroupSummary& g = s.overall;
  EXPECT_EQ(g.good, 2u);
  EXPECT_EQ(g.late, 1u);
  EXPECT_EQ(g.unverified, 1u);
  EXPECT_EQ(g.rejected_early, 1u);
  EXPECT_EQ(g.expired, 1u);
  EXPECT_EQ(g.errors, 1u);
  EXPECT_EQ(g.good + g.late + g.unverified + g.rejected_early + g.expired + g.errors, g.requests);
  // Verified-completion latency: E2E of the three verified requests only (10, 20, 30).
  EXPECT_EQ(g.verified_e2e_ms.count, 3u);
  EXPECT_DOUBLE_EQ(g.verified_e2e_ms.p50, 20);
  EXPECT_DOUBLE_EQ(g.verified_e2e_ms.p90, 28);  // rank 0.9 * 2 = 1.8 between 20 and 30
  EXPECT_DOUBLE_EQ(g.verified_e2e_ms.max, 30);
  EXPECT_EQ(g.verified_output_tokens, 30);

  auto failures = failure_groups(rs);
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_EQ(failures[0].outcome, "error");  // errors first
  EXPECT_EQ(failures[0].http_status, 500);
  EXPECT_EQ(failures[0].message, "refused: internal");
}

TEST(Speculative, AcceptanceAndTokensPerCycle) {
  std::vector<RequestResult> rs(3);
  rs[0].speculative.proposed = 8;
  rs[0].speculative.accepted = 6;
  rs[0].speculative.cycles = 2;
  rs[1].speculative.proposed = 4;
  rs[1].speculative.accepted = 1;
  rs[1].speculative.cycles = 1;
  // OpenAI fields only: counted in the rate, not in cycles.
  rs[2].speculative.accepted_prediction_tokens = 3;
  rs[2].speculative.rejected_prediction_tokens = 1;
  GroupSummary g = summarize_group({&rs[0], &rs[1], &rs[2]}, 1.0);
  EXPECT_EQ(g.speculative.requests, 3u);
  EXPECT_EQ(g.speculative.proposed, 16);
  EXPECT_EQ(g.speculative.accepted, 10);
  EXPECT_DOUBLE_EQ(*g.speculative.accepted_rate, 10.0 / 16.0);
  // Cycles from the Ladder extension only: (6 + 1 accepted + 3 cycles) / 3 cycles.
  EXPECT_DOUBLE_EQ(*g.speculative.tokens_per_cycle, 10.0 / 3.0);
  GroupSummary none = summarize_group({}, 1.0);
  EXPECT_FALSE(none.speculative.accepted_rate.has_value());
}

TEST(Cost, PerVerifiedRequestAndToken) {
  ReplayRun run;
  run.results = {finished(10, true), finished(10, true), finished(10, false), http_error(500, "x")};
  run.server_cpu_before_s = 100.0;
  run.server_cpu_after_s = 103.0;
  RunSummary s = summarize_run(run.results, 1.0);
  Prices prices{2.0, 8.0};
  CostSummary c = summarize_cost(run, s.overall, prices);
  EXPECT_DOUBLE_EQ(*c.server_core_s, 3.0);
  EXPECT_DOUBLE_EQ(*c.core_s_per_verified_request, 1.5);
  EXPECT_DOUBLE_EQ(*c.core_s_per_1k_verified_output_tokens, 150.0);  // 3 s / 20 verified tokens * 1000
  // Billed: every request with usage (3 x 100 in, 3 x 10 out), paid for by 2 verified.
  EXPECT_EQ(c.billed_input_tokens, 300);
  EXPECT_EQ(c.billed_output_tokens, 30);
  EXPECT_DOUBLE_EQ(*c.price_total, (300 * 2.0 + 30 * 8.0) / 1e6);
  EXPECT_DOUBLE_EQ(*c.price_per_verified_request, *c.price_total / 2);
  EXPECT_NE(cost_line(c).find("1.5 core-s per verified request"), std::string::npos) << cost_line(c);
  EXPECT_FALSE(c.shadow_core_s.has_value());

  // A server with shadow verification: its part shown separately.
  run.shadow_cpu_before_s = 4.0;
  run.shadow_cpu_after_s = 4.5;
  CostSummary shadowed = summarize_cost(run, s.overall, Prices{});
  EXPECT_DOUBLE_EQ(*shadowed.shadow_core_s, 0.5);
  EXPECT_DOUBLE_EQ(*shadowed.shadow_core_s_per_verified_request, 0.25);
  EXPECT_DOUBLE_EQ(*shadowed.core_s_per_verified_request, 1.5);  // the whole process's, shadow included
  EXPECT_NE(cost_line(shadowed).find("of which shadow verification 0.500 core-s"), std::string::npos)
      << cost_line(shadowed);

  run.server_cpu_after_s.reset();
  CostSummary blind = summarize_cost(run, s.overall, Prices{});
  EXPECT_FALSE(blind.server_core_s.has_value());
  EXPECT_FALSE(blind.price_total.has_value());
  EXPECT_NE(blind.note.find("process_cpu_seconds_total"), std::string::npos);
}

std::vector<double> drive(AutoSweep& sweep, const std::function<double(double)>& attainment) {
  std::vector<double> rates;
  while (auto r = sweep.next()) {
    rates.push_back(*r);
    sweep.record(*r, attainment(*r));
    if (rates.size() > 40) break;
  }
  return rates;
}

TEST(AutoSweep, DoublesThenBisects) {
  auto s = AutoSweep::create({1.0, 0.9, 3, 1000, 6});
  ASSERT_TRUE(s.is_ok());
  // Attainment falls between 13 and 14 arrivals/s.
  auto rates = drive(*s, [](double r) { return r < 13.5 ? 1.0 : 0.2; });
  EXPECT_EQ(rates, (std::vector<double>{1, 2, 4, 8, 16, 12, 14, 13}));
  SweepVerdict v = find_max_goodput_rate(s->points(), 0.9);
  EXPECT_TRUE(v.limit_found);
  EXPECT_DOUBLE_EQ(*v.max_rate, 13);
}

TEST(AutoSweep, HalvesWhenTheStartFails) {
  auto s = AutoSweep::create({8.0, 0.9, 2, 1000, 6});
  ASSERT_TRUE(s.is_ok());
  auto rates = drive(*s, [](double r) { return r <= 2 ? 0.95 : 0.5; });
  EXPECT_EQ(rates, (std::vector<double>{8, 4, 2, 3, 2.5}));
  // Never meeting the target: a few halvings, then a verdict that says so.
  auto never = AutoSweep::create({1.0, 0.9, 2, 1000, 3});
  auto tried = drive(*never, [](double) { return 0.0; });
  EXPECT_EQ(tried, (std::vector<double>{1, 0.5, 0.25, 0.125}));
  EXPECT_NE(find_max_goodput_rate(never->points(), 0.9).statement().find("not met at any swept rate"),
            std::string::npos);
}

TEST(AutoSweep, StopsAtTheCeilingAndSaysSo) {
  auto s = AutoSweep::create({1.0, 0.9, 3, 8, 6});
  ASSERT_TRUE(s.is_ok());
  auto rates = drive(*s, [](double) { return 1.0; });
  EXPECT_EQ(rates, (std::vector<double>{1, 2, 4, 8}));
  SweepVerdict v = find_max_goodput_rate(s->points(), 0.9);
  EXPECT_FALSE(v.limit_found);
  EXPECT_EQ(v.statement(), "not reached below 8 arrivals/s (the highest swept rate still met the target)");
  EXPECT_FALSE(AutoSweep::create({0, 0.9, 3, 8, 6}).is_ok());
  EXPECT_FALSE(AutoSweep::create({16, 0.9, 3, 8, 6}).is_ok());
}

}  // namespace
}  // namespace ladder::harness
