// Native JSONL workloads and the arrival schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "harness/schedule.h"
#include "harness/workload.h"

namespace ladder::harness {
namespace {

TEST(NativeWorkload, ParsesAndRoundTrips) {
  const std::string text =
      "# a comment\n"
      "{\"t\": 0.5, \"tenant\": \"a\", \"prompt\": \"hi\", \"max_tokens\": 4, \"slice\": \"rare\","
      " \"slo\": {\"ttft_ms\": 100, \"e2e_ms\": 900}, \"expect\": {\"substring\": \"42\"}}\n"
      "{\"t\": 1, \"session\": \"s\", \"turn\": 1, \"think_s\": 2.5,"
      " \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n"
      "{\"t\": 2, \"input_tokens\": 300, \"hash_ids\": [1, 2]}\n";
  auto w = parse_native_workload(text, true);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->requests.size(), 3u);
  const auto& a = w->requests[0];
  EXPECT_EQ(a.tenant, "a");
  EXPECT_EQ(a.source_line, 2);
  EXPECT_EQ(*a.slo.ttft_ms, 100);
  EXPECT_FALSE(a.slo.tpot_ms.has_value());
  ASSERT_TRUE(a.expect.has_value());
  EXPECT_EQ(a.expect->kind, Expectation::Kind::kSubstring);
  EXPECT_EQ(w->requests[1].think_s, 2.5);
  EXPECT_TRUE(w->requests[1].is_chat());
  EXPECT_EQ(w->requests[2].hash_ids, (std::vector<int64_t>{1, 2}));

  auto again = parse_native_workload(write_native_workload(w->requests), true);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(write_native_workload(again->requests), write_native_workload(w->requests));
}

TEST(NativeWorkload, MalformedLinesNamed) {
  const std::string text =
      "{\"prompt\": \"ok\"}\n"
      "{\"prompt\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"b\"}]}\n"  // two sources
      "{\"prompt\": \"a\", \"max_tokens\": 0}\n"                                        // bound
      "not json\n"
      "{\"prompt\": \"a\", \"slo\": {\"ttft_ms\": -5}}\n"
      "{\"prompt\": \"a\", \"expect\": {\"regex\": \"x\"}}\n";
  auto w = parse_native_workload(text, false);
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(w->requests.size(), 1u);
  ASSERT_EQ(w->skipped.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(w->skipped[i].line, i + 2);
  auto strict = parse_native_workload(text, true);
  ASSERT_FALSE(strict.is_ok());
  EXPECT_NE(strict.status().message().find("line 2:"), std::string::npos);
}

TEST(Sha256, KnownVector) {
  // FIPS 180-2 example: sha256("abc").
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Schedule, ConstantArrivalsAreExact) {
  auto t = arrival_times(5, 4.0, ArrivalProcess{ArrivalProcess::Kind::kConstant, 1}, 7);
  EXPECT_EQ(t, (std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0}));
}

TEST(Schedule, PoissonAndGammaHaveTheirMoments) {
  const size_t n = 40000;
  for (double cv : {1.0, 2.0, 0.5}) {
    ArrivalProcess p;
    if (cv != 1.0) p = ArrivalProcess{ArrivalProcess::Kind::kGamma, cv};
    auto t = arrival_times(n, 10.0, p, 3);
    std::vector<double> gaps(n);
    gaps[0] = t[0];
    for (size_t i = 1; i < n; ++i) gaps[i] = t[i] - t[i - 1];
    double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / n;
    double var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    double sd = std::sqrt(var / (n - 1));
    EXPECT_NEAR(mean, 0.1, 0.1 * 0.04) << "cv " << cv;     // rate 10/s
    EXPECT_NEAR(sd / mean, cv, cv * 0.06) << "cv " << cv;  // exponential: CV 1
  }
  EXPECT_FALSE(parse_arrival("gamma:0").is_ok());
  EXPECT_FALSE(parse_arrival("gamma:x").is_ok());
  EXPECT_FALSE(parse_arrival("uniform").is_ok());
  EXPECT_DOUBLE_EQ(parse_arrival("gamma:2.5")->cv, 2.5);
}

Workload sample_workload() {
  Workload w;
  auto add = [&](double t, const std::string& session, int turn) {
    WorkloadRequest r;
    r.t = t;
    r.session = session;
    r.turn = turn;
    r.prompt = "p";
    w.requests.push_back(r);
  };
  add(4.0, "", 0);
  add(1.0, "s", 0);
  add(9.0, "s", 1);  // a later turn: its own t does not matter
  add(2.0, "", 0);
  add(6.0, "", 0);
  return w;
}

TEST(Schedule, TimeScaleAndWindows) {
  Workload w = sample_workload();
  ScheduleOptions o;
  o.time_scale = 0.5;
  o.duration_s = 2.5;
  ASSERT_TRUE(apply_schedule(w, o).is_ok());
  // Scaled: s@0.5 (+ its turn 1), 1.0, 2.0, 3.0 -> the window keeps t < 2.5.
  ASSERT_EQ(w.requests.size(), 4u);
  EXPECT_EQ(w.requests[0].session, "s");
  EXPECT_EQ(w.requests[1].session, "s");
  EXPECT_EQ(w.requests[1].turn, 1);
  EXPECT_DOUBLE_EQ(w.requests[1].t, 0.5);
  EXPECT_DOUBLE_EQ(w.requests[2].t, 1.0);
  EXPECT_DOUBLE_EQ(w.requests[3].t, 2.0);
  ASSERT_EQ(w.notes.size(), 2u);
  EXPECT_NE(w.notes[0].find("time scale 0.5"), std::string::npos);
  EXPECT_NE(w.notes[1].find("1 requests arriving at or after 2.5"), std::string::npos);
  EXPECT_EQ(arrival_unit_count(w.requests), 3u);
}

TEST(Schedule, RateRedrawsUnitsAndKeepsSessionsTogether) {
  Workload w = sample_workload();
  ScheduleOptions o;
  o.rate = 2.0;
  o.arrival = ArrivalProcess{ArrivalProcess::Kind::kConstant, 1};
  o.max_requests = 3;
  ASSERT_TRUE(apply_schedule(w, o).is_ok());
  // Units in trace order: s (t=1, 2 turns), t=2, t=4, t=6 -> 0, 0.5, 1.0, 1.5; first 3 requests kept.
  ASSERT_EQ(w.requests.size(), 3u);
  EXPECT_DOUBLE_EQ(w.requests[0].t, 0.0);
  EXPECT_DOUBLE_EQ(w.requests[1].t, 0.0);
  EXPECT_DOUBLE_EQ(w.requests[2].t, 0.5);
  EXPECT_EQ(w.requests[2].session, "");
}

}  // namespace
}  // namespace ladder::harness
