// The `ladder workload` and `ladder replay` command lines, and the record
// helpers, without a server (a refused port stands in for "no server").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/record.h"
#include "harness/summary_table.h"
#include "harness/workload.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;

TEST(WorkloadCli, WritesAParsableWorkload) {
  const std::string out = ladder::testing::temp_dir() + "/needle.jsonl";
  auto res = ladder::testing::run_command({ladder::testing::ladder_bin(), "workload", "needle", "-o", out,
                                           "--requests", "5", "--seed", "3", "--depth", "0.9",
                                           "--slo", "ttft_ms=100,e2e_ms=900"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  auto w = parse_native_workload(ladder::testing::read_file(out), true);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->requests.size(), 5u);
  for (const auto& r : w->requests) {
    ASSERT_TRUE(r.expect.has_value());
    EXPECT_NE(r.prompt.find(r.expect->text), std::string::npos);
    EXPECT_DOUBLE_EQ(*r.slo.ttft_ms, 100);
    EXPECT_DOUBLE_EQ(*r.slo.e2e_ms, 900);
  }
  res = ladder::testing::run_command({ladder::testing::ladder_bin(), "workload", "needle", "-o", out, "--depth", "2"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("--depth"), std::string::npos) << res.err;
}

TEST(ReplayCli, MalformedLinesWarnOrFailWithLineNumbers) {
  const std::string dir = ladder::testing::temp_dir();
  const std::string wl = dir + "/bad.jsonl";
  std::ofstream(wl) << "{\"prompt\": \"a\", \"max_tokens\": 2}\n{\"prompt\": 5}\n{\"prompt\": \"b\"}\n";
  auto strict = ladder::testing::run_command({ladder::testing::ladder_bin(), "replay", "--endpoint",
                                              "http://127.0.0.1:1", "--workload", wl, "--out", dir + "/s",
                                              "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("line 2"), std::string::npos) << strict.err;

  auto lenient = ladder::testing::run_command({ladder::testing::ladder_bin(), "replay", "--endpoint",
                                               "http://127.0.0.1:1", "--workload", wl, "--out", dir + "/l",
                                               "--wait-ready", "0", "--quiet", "--timeout", "2"});
  // Measured and written, but nothing answered: a failing exit, with why.
  ASSERT_EQ(lenient.exit_code, 2) << lenient.err;
  EXPECT_NE(lenient.err.find("line 2 skipped"), std::string::npos) << lenient.err;
  EXPECT_NE(lenient.err.find("2 requests failed"), std::string::npos) << lenient.err;
  EXPECT_NE(lenient.err.find("no request verified"), std::string::npos) << lenient.err;
  json record = json::parse(ladder::testing::read_file(dir + "/l/record.json"));
  EXPECT_EQ(record["workload"]["requests"], 2);
  EXPECT_EQ(record["workload"]["skipped_lines"], 1);
  EXPECT_EQ(record["workload"]["skipped"][0]["line"], 2);
  EXPECT_EQ(record["runs"][0]["summary"]["overall"]["good"], 0);  // nothing answered
}

TEST(Record, Helpers) {
  std::vector<WorkloadRequest> reqs(5);
  for (int i = 0; i < 5; ++i) reqs[i].t = 0.5 * i;  // 5 arrivals over 2 s -> 2 per second
  EXPECT_DOUBLE_EQ(offered_rate_of(reqs), 2.0);

  std::vector<RequestResult> rs(3);
  rs[0].ttft_ms = 12;
  rs[0].server_timings = {{"ttft_ms", 10}};
  rs[1].ttft_ms = 9;
  rs[1].server_timings = {{"ttft_ms", 8}};
  rs[2].ttft_ms = 5;  // no server timing: not compared
  json agree = ttft_agreement(rs);
  EXPECT_EQ(agree["requests_with_server_ttft"], 2);
  EXPECT_DOUBLE_EQ(agree["client_minus_server_ms"]["max"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(agree["client_minus_server_ms"]["mean"].get<double>(), 1.5);

  rs[0].prompt_chars = 300;
  rs[0].prompt_tokens = 100;
  rs[1].prompt_chars = 100;
  rs[1].prompt_tokens = 60;
  EXPECT_DOUBLE_EQ(measured_chars_per_token(rs), 2.5);  // 400 / 160

  RunReport rr;
  rr.label = "rate 3";
  rr.offered_rate = 3;
  rr.run.results = rs;
  rr.run.window_s = 1;
  rr.summary = summarize_run(rs, 1);
  std::string table = format_summary_table({rr});
  EXPECT_NE(table.find("== rate 3: offered 3.000"), std::string::npos) << table;
  EXPECT_NE(table.find("tenant default"), std::string::npos);
  EXPECT_NE(table.find("characters per server-counted token: 2.50"), std::string::npos) << table;
}

}  // namespace
}  // namespace ladder::harness
