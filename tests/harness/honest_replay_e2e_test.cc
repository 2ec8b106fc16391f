// What a replay owes its reader, against real `ladder serve` processes:
// deadlines reach the server and its early rejections are reported apart
// from late answers; --sweep auto finds (or honestly fails to find) the max
// goodput rate; cost per verified task agrees with the server's own CPU
// accounting; options that cannot apply are errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "net/http_client.h"
#include "harness/server_probe.h"
#include "harness/workload.h"
#include "ladder_server.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;
using testing::LadderServer;
using testing::read_json;

std::string burst_workload(const std::string& name, int n, int max_tokens) {
  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < n; ++i) reqs.push_back(testing::completion(0, "a", "Once upon a time", max_tokens, "story"));
  return testing::write_workload(name, reqs);
}

// One running slot: a burst queues behind the first request. With a 2 ms
// TTFT SLO sent as the deadline, the server declines what it cannot start
// in time (429 deadline_infeasible); without the header it serves it late.
TEST(HonestReplay, DeadlinesReachTheServerAndEarlyRejectionsAreApart) {
  LadderServer server({"--max-running", "1"});
  ASSERT_FALSE(server.url().empty());
  const std::string wl = burst_workload("burst.jsonl", 6, 120);  // each holds the slot for 120 tokens
  const std::string dir = ladder::testing::temp_dir();
  auto res = testing::replay(server.url(), wl, dir + "/dl-on", {"--slo", "ttft_ms=2", "--quiet"});
  // Rejections are the server's answer, not errors of the measurement.
  ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
  int rejected = 0, late = 0;
  for (const auto& r : testing::read_jsonl(dir + "/dl-on/requests.jsonl")) {
    EXPECT_EQ(r["deadline_ms"], 2.0) << r.dump();
    if (r["outcome"] == "rejected_early") {
      ++rejected;
      EXPECT_EQ(r["http_status"], 429);
      EXPECT_EQ(r["error_code"], "deadline_infeasible");
    }
    late += r["outcome"] == "late";
  }
  EXPECT_GE(rejected, 4);
  json rec = read_json(dir + "/dl-on/record.json");
  const json& outcomes = rec["runs"][0]["summary"]["overall"]["outcomes"];
  EXPECT_EQ(outcomes["rejected_early"], rejected);
  EXPECT_EQ(outcomes["late"], late);
  EXPECT_EQ(outcomes["errors"], 0);
  EXPECT_EQ(rec["runs"][0]["failures"][0]["code"], "deadline_infeasible");
  EXPECT_EQ(rec["slos"]["per_slice"]["story"][0], "TTFT 2 ms");
  EXPECT_NE(res.out.find("rejected_early x"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("deadline_infeasible"), std::string::npos);

  res = testing::replay(server.url(), wl, dir + "/dl-off", {"--slo", "ttft_ms=2", "--no-deadlines", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  rec = read_json(dir + "/dl-off/record.json");
  EXPECT_EQ(rec["runs"][0]["summary"]["overall"]["outcomes"]["rejected_early"], 0);
  EXPECT_GE(rec["runs"][0]["summary"]["overall"]["outcomes"]["late"].get<int>(), 5);
  for (const auto& r : testing::read_jsonl(dir + "/dl-off/requests.jsonl")) EXPECT_TRUE(r["deadline_ms"].is_null());
}

TEST(HonestReplay, AutoSweepDoublesAndSaysWhenTheLimitWasNotReached) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty());
  const std::string wl = burst_workload("sweep-auto.jsonl", 4, 4);
  const std::string dir = ladder::testing::temp_dir();
  // Lenient SLO: every rate up to the ceiling meets it.
  auto res = testing::replay(server.url(), wl, dir + "/auto-up",
                             {"--sweep", "auto", "--rate", "8", "--sweep-max-rate", "32", "--arrival", "constant",
                              "--requests", "3", "--slo", "e2e_ms=20000", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  json rec = read_json(dir + "/auto-up/record.json");
  std::vector<double> rates;
  for (const auto& p : rec["sweep"]["points"]) rates.push_back(p["offered_rate"].get<double>());
  EXPECT_EQ(rates, (std::vector<double>{8, 16, 32}));
  EXPECT_EQ(rec["sweep"]["limit_found"], false);
  EXPECT_NE(res.out.find("not reached below 32 arrivals/s"), std::string::npos) << res.out;
  // An SLO nothing meets (served late, no deadline sent): halving, then the verdict says so.
  res = testing::replay(server.url(), wl, dir + "/auto-down",
                        {"--sweep", "auto", "--rate", "64", "--arrival", "constant", "--requests", "2", "--slo",
                         "ttft_ms=0.001", "--no-deadlines", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  rec = read_json(dir + "/auto-down/record.json");
  rates.clear();
  for (const auto& p : rec["sweep"]["points"]) rates.push_back(p["offered_rate"].get<double>());
  EXPECT_EQ(rates, (std::vector<double>{64, 32, 16, 8, 4, 2, 1}));
  EXPECT_TRUE(rec["sweep"]["max_goodput_rate"].is_null());
  EXPECT_NE(res.out.find("not met at any swept rate (lowest 1 arrivals/s)"), std::string::npos) << res.out;
}

// The server's process_cpu_seconds_total before and after a run against
// /proc/PID/stat of the process this test started.
TEST(HonestReplay, CostAgreesWithTheServersCpuAccounting) {
  const std::string dir = ladder::testing::temp_dir();
  auto made = ladder::testing::run_command({ladder::testing::ladder_bin(), "synth", "--preset", "tiny", "--seed", "3",
                                            "-o", dir + "/cost.gguf"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  LadderServer server({}, dir + "/cost.gguf");
  ASSERT_FALSE(server.url().empty());
  auto ep = net::parse_endpoint(server.url());
  ASSERT_TRUE(ep.is_ok());
  ASSERT_TRUE(wait_until_ready(*ep, "", 60).is_ok());  // loading is not the run's work
  ASSERT_TRUE(process_cpu_seconds(probe_server(*ep, "", 10).metrics)) << "ladder serve's /metrics has process_cpu_seconds_total";
  // Enough work that the two clocks' granularity (10 ms ticks) does not
  // matter: the workload doubles until the server spent 0.2 core-s on it, so
  // a fast machine gets more requests, not a weaker comparison.
  int n = 24;
  double proc = 0;
  json cost;
  ladder::testing::CommandResult res;
  for (int attempt = 0; attempt < 6; ++attempt, n *= 2) {
    std::vector<WorkloadRequest> reqs;
    for (int i = 0; i < n; ++i) {
      reqs.push_back(testing::completion(0.01 * i, "a", "Once upon a time " + std::to_string(i), 96, "s"));
    }
    const std::string wl = testing::write_workload("cost.jsonl", reqs);
    const std::string out = dir + "/cost-out-" + std::to_string(n);
    const double before = testing::proc_cpu_seconds(server.pid());
    res = testing::replay(server.url(), wl, out, {"--ignore-eos", "--quiet", "--wait-ready", "0"});
    const double after = testing::proc_cpu_seconds(server.pid());
    ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
    cost = read_json(out + "/record.json")["runs"][0]["cost"];
    proc = after - before;
    if (proc > 0.2) break;
  }
  ASSERT_GT(proc, 0.2) << "too little work to compare even at " << n << " requests";
  ASSERT_FALSE(cost["server_core_s"].is_null());
  const double reported = cost["server_core_s"].get<double>();
  // /proc brackets the whole command (probes included); the replay's window is inside it.
  EXPECT_LE(reported, proc + 0.02);
  EXPECT_GE(reported, 0.85 * proc - 0.05) << "reported " << reported << " core-s, /proc says " << proc;
  EXPECT_NEAR(cost["core_s_per_verified_request"].get<double>(), reported / n, 1e-9);
  EXPECT_NEAR(cost["core_s_per_1k_verified_output_tokens"].get<double>(), reported * 1000 / (n * 96), 1e-9);
  EXPECT_NE(res.out.find("core-s per verified request"), std::string::npos);
}

TEST(HonestReplay, PricesGiveCostPerVerifiedRequest) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty());
  const std::string wl = burst_workload("price.jsonl", 3, 16);
  const std::string dir = ladder::testing::temp_dir();
  auto res = testing::replay(server.url(), wl, dir + "/price",
                             {"--price-in", "3", "--price-out", "15", "--ignore-eos", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const json cost = read_json(dir + "/price/record.json")["runs"][0]["cost"];
  // 3 requests x (5 prompt tokens at 3 + 16 output tokens at 15) per million, over 3 verified.
  EXPECT_NEAR(cost["price_total"].get<double>(), 3 * (5 * 3.0 + 16 * 15.0) / 1e6, 1e-12);
  EXPECT_NEAR(cost["price_per_verified_request"].get<double>(), (5 * 3.0 + 16 * 15.0) / 1e6, 1e-12);
}

// The fingerprint covers what the server says it is: the same server gives
// the same fingerprint whatever the port; another KV format another one;
// and, once the server publishes its effective configuration
// (ladder.config in /v1/models), every setting in it.
TEST(HonestReplay, FingerprintCoversTheServersConfiguration) {
  const std::string wl = burst_workload("fingerprint.jsonl", 2, 4);
  const std::string dir = ladder::testing::temp_dir();
  auto fingerprint = [&](const std::vector<std::string>& flags, const std::string& name) {
    LadderServer server(flags);
    EXPECT_FALSE(server.url().empty());
    auto res = testing::replay(server.url(), wl, dir + "/" + name, {"--quiet"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    return read_json(dir + "/" + name + "/record.json")["configuration"];
  };
  const json a = fingerprint({}, "fp-a");
  const json again = fingerprint({}, "fp-again");
  const json f32 = fingerprint({"--kv-dtype", "f32"}, "fp-f32");
  EXPECT_EQ(a["fingerprint_sha256"], again["fingerprint_sha256"]);
  EXPECT_NE(a["endpoint"], again["endpoint"]);  // another port, same configuration
  EXPECT_NE(a["fingerprint_sha256"], f32["fingerprint_sha256"]);
  EXPECT_NE(a["server_fingerprint_sha256"], f32["server_fingerprint_sha256"]);
  EXPECT_EQ(a["verification"]["mode"], "none");
  const json chunked = fingerprint({"--max-batch-tokens", "16"}, "fp-chunked");
  ASSERT_FALSE(a["server_config"].is_null()) << "ladder serve publishes its configuration under ladder.config in /v1/models";
  EXPECT_NE(a["server_config"], chunked["server_config"]);
  EXPECT_NE(a["fingerprint_sha256"], chunked["fingerprint_sha256"]);
}

TEST(HonestReplay, OptionsThatCannotApplyAreErrors) {
  const std::string dir = ladder::testing::temp_dir();
  WorkloadRequest chat;
  chat.messages = {{"user", "hi"}};
  const std::string chat_wl = testing::write_workload("cannot-chat.jsonl", {chat});
  const std::string prompt_wl = burst_workload("cannot-prompt.jsonl", 1, 4);
  struct Case {
    std::string workload;
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {chat_wl, {"--max-input-tokens", "10"}, "--max-input-tokens cannot cut chat messages"},
      {prompt_wl, {"--arrival", "constant"}, "--arrival applies only when arrivals are re-drawn"},
      {prompt_wl, {"--seed", "4"}, "--seed applies only when arrivals are re-drawn"},
      {prompt_wl, {"--rate", "2", "--time-scale", "0.5"}, "--time-scale scales the workload's timestamps"},
      {prompt_wl, {"--target", "0.5"}, "--target applies only to --sweep"},
      {prompt_wl, {"--sweep", "1,2", "--sweep-steps", "2"}, "--sweep-steps applies only to --sweep auto"},
      {prompt_wl, {"--verify", "approx"}, "--verify needs --reference"},
      {prompt_wl, {"--min-match", "0.5"}, "apply only to --verify approx"},
      {prompt_wl, {"--text", ladder::testing::shared_dir() + "/text/war-and-peace.txt"}, "--text applies only to prompts synthesized"},
      {prompt_wl, {"--tenant-key", "zz=k"}, "tenant 'zz', which no request"},
      {prompt_wl, {"--save-reference", dir + "/r.json", "--sweep", "1,2"}, "cannot be combined with --sweep"},
      {prompt_wl, {"--ca-cert", prompt_wl}, "only to https://"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> flags = c.flags;
    flags.insert(flags.end(), {"--wait-ready", "0", "--quiet"});
    auto res = testing::replay("http://127.0.0.1:1", c.workload, dir + "/cannot", flags);
    EXPECT_EQ(res.exit_code, 1) << c.flags[0] << ": " << res.err;
    EXPECT_NE(res.err.find(c.says), std::string::npos) << c.flags[0] << ": " << res.err;
  }
}

}  // namespace
}  // namespace ladder::harness
