// `ladder replay` against a real `ladder serve` (no mocks): the client's
// TTFT agrees with the server's own per-request timing, output tokens come
// from usage, verification and every SLO gate goodput, per-tenant numbers add
// up, sessions carry their history, and a sweep writes its verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/workload.h"
#include "ladder_server.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;

// Client TTFT (send -> first token received) minus the server's TTFT
// (arrival -> first token sampled) covers connect, parse and one SSE write on
// loopback: at most this much on an idle machine, and on a busy one no more
// than the run's median request takes from send to its last token (one hop
// against a whole request's decoding).
constexpr double kTtftToleranceMs = 250.0;

using testing::LadderServer;
using testing::read_jsonl;
using testing::write_workload;

// "Once upon a time" with a substring expectation, in slice "story".
WorkloadRequest story(double t, const std::string& tenant, const std::string& expect) {
  WorkloadRequest r = testing::completion(t, tenant, "Once upon a time", 16, "story");
  r.expect = Expectation{Expectation::Kind::kSubstring, expect};
  return r;
}

ladder::testing::CommandResult replay(const LadderServer& s, const std::string& workload, const std::string& out,
                                      std::vector<std::string> extra) {
  return testing::replay(s.url(), workload, out, std::move(extra));
}

TEST(ReplayE2E, MeasuresARealServer) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty()) << "ladder serve did not report its address";
  // The model's golden greedy continuation of "Once upon a time" (models/README.md)
  // contains "there was a little girl named Lily"; "purple elephant" it never says.
  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(story(0.05 * i, i % 2 ? "b" : "a", "there was a little girl named Lily"));
  reqs.push_back(story(0.4, "a", "purple elephant"));
  reqs.push_back(story(0.45, "b", "purple elephant"));
  // A two-turn chat session: turn 1 is sent with turn 0 and its reply ahead of it.
  WorkloadRequest c0;
  c0.t = 0.1;
  c0.tenant = "b";
  c0.session = "s";
  c0.slice = "chat";
  c0.max_tokens = 8;
  c0.messages = {{"user", "Hi"}};
  WorkloadRequest c1 = c0;
  c1.turn = 1;
  c1.think_s = 0.05;
  c1.messages = {{"user", "And then?"}};
  reqs.push_back(c0);
  reqs.push_back(c1);
  const std::string wl = write_workload("e2e.jsonl", reqs);
  const std::string out = ladder::testing::temp_dir() + "/e2e-out";

  auto res = replay(server, wl, out, {"--slo", "ttft_ms=5000,e2e_ms=20000"});
  ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
  EXPECT_NE(res.out.find("overall"), std::string::npos);  // the summary table
  EXPECT_NE(res.err.find("[replay"), std::string::npos);  // progress on stderr

  auto results = read_jsonl(out + "/requests.jsonl");
  ASSERT_EQ(results.size(), reqs.size());
  int good = 0, verified = 0, with_server_ttft = 0;
  std::map<std::string, int> good_by_tenant;
  std::vector<double> e2e;
  for (const auto& r : results) e2e.push_back(r["e2e_ms"].get<double>());
  std::sort(e2e.begin(), e2e.end());
  const double gap_bound = std::max(kTtftToleranceMs, e2e[e2e.size() / 2]);
  for (const auto& r : results) {
    ASSERT_EQ(r["http_status"], 200) << r.dump();
    const bool expect_lily = r["source_line"].get<int>() <= 6;  // lines 1-6 of the file
    if (r["slice"] == "story") {
      // usage: "Once upon a time" is 5 tokens with BOS (models/README.md);
      // 16 tokens generated unless the model stops.
      EXPECT_EQ(r["prompt_tokens"], 5) << r.dump();
      if (r["finish_reason"] == "length") {
        EXPECT_EQ(r["output_tokens"], 16);
      }
      EXPECT_EQ(r["verified"], expect_lily) << r.dump();
    }
    EXPECT_GE(r["output_tokens"].get<int>(), 1);
    EXPECT_GE(r["sse_events"].get<int>(), r["token_chunks"].get<int>());
    // Goodput = verified and within every SLO, recomputed from the raw numbers.
    const bool in_slo = r["ttft_ms"].get<double>() <= 5000 && r["e2e_ms"].get<double>() <= 20000;
    EXPECT_EQ(r["good"].get<bool>(), r["verified"].get<bool>() && in_slo);
    good += r["good"].get<bool>();
    verified += r["verified"].get<bool>();
    if (r["good"].get<bool>()) good_by_tenant[r["tenant"]]++;
    ASSERT_TRUE(r.contains("server_timings")) << r.dump();
    const double client = r["ttft_ms"].get<double>();
    const double srv = r["server_timings"]["ttft_ms"].get<double>();
    EXPECT_GE(client, srv - 1.0) << "the client saw a token before the server made it?";
    EXPECT_LE(client - srv, gap_bound) << r.dump();
    ++with_server_ttft;
  }
  EXPECT_EQ(verified, 8);
  EXPECT_EQ(with_server_ttft, static_cast<int>(reqs.size()));
  // Closed loop: turn 1 (file line 10) is sent after turn 0 (line 9) finished
  // plus its think time, and its prompt holds turn 0's prompt and reply.
  json turn0, turn1;
  for (const auto& r : results) {
    if (r["source_line"] == 9) turn0 = r;
    if (r["source_line"] == 10) turn1 = r;
  }
  ASSERT_EQ(turn0["turn"], 0);
  ASSERT_EQ(turn1["turn"], 1);
  EXPECT_GT(turn1["prompt_tokens"].get<int>(), turn0["prompt_tokens"].get<int>() + turn0["output_tokens"].get<int>());
  EXPECT_GE(turn1["sent_s"].get<double>(), turn0["sent_s"].get<double>() + turn0["e2e_ms"].get<double>() / 1000 + 0.05 - 1e-3);

  json record = json::parse(ladder::testing::read_file(out + "/record.json"));
  EXPECT_EQ(record["schema_version"], 2);
  EXPECT_EQ(record["workload"]["digest_sha256"], sha256_hex(ladder::testing::read_file(wl)));
  EXPECT_GT(record["machine"]["cores"].get<int>(), 0);
  EXPECT_EQ(record["server"]["models"]["data"][0]["id"], "stories260K");
  // The fingerprint names the exact weights (an independent sha256 of the
  // file), the KV format and both revisions.
  const json& cfg = record["configuration"];
  EXPECT_EQ(cfg["model_digest"],
            sha256_hex(ladder::testing::read_file(ladder::testing::shared_dir() + "/models/stories260K.gguf")));
  EXPECT_EQ(cfg["tokenizer_digest"].get<std::string>().size(), 64u);
  EXPECT_EQ(cfg["kv_dtype"], "F16");
  EXPECT_NE(cfg["engine_revision"], "");
  EXPECT_EQ(cfg["engine_revision"], cfg["harness_revision"]);  // one build serves and replays here
  EXPECT_EQ(cfg["kernels"], record["server"]["models"]["data"][0]["ladder"]["kernels"]);
  EXPECT_NE(cfg["kernels"], "unknown");
  EXPECT_EQ(cfg["fingerprint_sha256"].get<std::string>().size(), 64u);
  const json& summary = record["runs"][0]["summary"];
  EXPECT_EQ(summary["overall"]["good"], good);
  EXPECT_EQ(summary["overall"]["requests"], reqs.size());
  int tenant_sum = 0;
  for (const auto& [k, g] : summary["per_tenant"].items()) {
    tenant_sum += g["good"].get<int>();
    EXPECT_EQ(g["good"], good_by_tenant[k]);
  }
  EXPECT_EQ(tenant_sum, good);
  EXPECT_EQ(record["runs"][0]["ttft_vs_server"]["requests_with_server_ttft"], reqs.size());
  EXPECT_TRUE(std::filesystem::exists(out + "/report.html"));

  // The same traffic under an impossible TTFT SLO: verified, yet no goodput.
  const std::string out2 = ladder::testing::temp_dir() + "/e2e-strict";
  res = replay(server, wl, out2, {"--slo", "ttft_ms=0.001", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  json strict = json::parse(ladder::testing::read_file(out2 + "/record.json"));
  EXPECT_EQ(strict["runs"][0]["summary"]["overall"]["good"], 0);
  EXPECT_EQ(strict["runs"][0]["summary"]["overall"]["verified"], 8);
}

TEST(ReplayE2E, SweepFindsAMaxGoodputRate) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty());
  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(story(0, "a", "Lily"));
  const std::string wl = write_workload("sweep.jsonl", reqs);
  const std::string out = ladder::testing::temp_dir() + "/sweep-out";
  auto res = replay(server, wl, out, {"--sweep", "4,8", "--arrival", "constant", "--slo", "e2e_ms=20000", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  json record = json::parse(ladder::testing::read_file(out + "/record.json"));
  ASSERT_EQ(record["runs"].size(), 2u);
  EXPECT_EQ(record["runs"][0]["nominal_rate"], 4.0);
  EXPECT_EQ(record["sweep"]["points"].size(), 2u);
  // Every request verifies and 20 s is far above the tiny model's latency.
  // Every rate met the target, so the limit was not found: it lies above 8.
  EXPECT_EQ(record["sweep"]["max_goodput_rate"], 8.0);
  EXPECT_EQ(record["sweep"]["limit_found"], false);
  EXPECT_NE(res.out.find("max goodput rate at 90% attainment: not reached below 8 arrivals/s"), std::string::npos)
      << res.out;
}

TEST(ReplayE2E, ConcurrencyCapHoldsRequestsBack) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty());
  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(story(0, "a", "Lily"));  // all due at once
  const std::string wl = write_workload("cap.jsonl", reqs);
  const std::string out = ladder::testing::temp_dir() + "/cap-out";
  auto res = replay(server, wl, out, {"--concurrency", "1", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  auto results = read_jsonl(out + "/requests.jsonl");
  ASSERT_EQ(results.size(), 5u);
  // One at a time: each request is sent after the previous one finished, and
  // the wait shows up as send lag (cap_wait_ms), not as hidden latency.
  std::vector<std::pair<double, double>> spans;  // [sent, end] in seconds
  double waited = 0;
  for (const auto& r : results) {
    spans.push_back({r["sent_s"].get<double>(), r["sent_s"].get<double>() + r["e2e_ms"].get<double>() / 1000});
    waited += r["cap_wait_ms"].get<double>();
    EXPECT_GE(r["send_lag_ms"].get<double>() + 1e-6, r["cap_wait_ms"].get<double>());
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-4);
  EXPECT_GT(waited, 0);
  json record = json::parse(ladder::testing::read_file(out + "/record.json"));
  for (const auto& s : record["runs"][0]["timeline"]) EXPECT_LE(s["in_flight"].get<int>(), 1);
}

// Mooncake rows that share hash_ids[0] get byte-identical synthesized
// prefixes, so the server's prefix cache hits on them (its per-request
// cached_tokens); the same lengths with distinct ids never hit.
TEST(ReplayE2E, TraceHashIdsExercisePrefixCaching) {
  LadderServer server;
  ASSERT_FALSE(server.url().empty());
  auto run = [&](const std::string& workload, const std::string& name) {
    const std::string out = ladder::testing::temp_dir() + "/" + name;
    auto res = replay(server, workload, out,
                      {"--length-scale", "0.1", "--max-input-tokens", "100", "--max-output-tokens", "4",
                       "--chars-per-token", "1.5", "--rate", "10", "--arrival", "constant", "--requests", "8",
                       "--concurrency", "1", "--quiet"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    return read_jsonl(out + "/requests.jsonl");
  };
  // One request in flight at a time: each finds the blocks of the ones before
  // it in the cache however slowly the machine prefills (at 10 arrivals/s
  // alone, a slow prefill let the next request arrive before them).
  // The real trace: its first rows all start with block 0 (51 tokens after scaling).
  auto shared = run(ladder::testing::shared_path("traces/mooncake_conversation_trace.jsonl"), "mc-shared");
  ASSERT_EQ(shared.size(), 8u);
  for (size_t i = 1; i < shared.size(); ++i) {
    ASSERT_TRUE(shared[i]["verified"].get<bool>()) << shared[i].dump();
    EXPECT_GT(shared[i]["server_timings"]["cached_tokens"].get<int>(), 0) << shared[i].dump();
  }
  // Same shape, every block id distinct.
  std::string distinct;
  for (int i = 0; i < 8; ++i) {
    distinct += "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 10, \"hash_ids\": [" +
                std::to_string(100 + 2 * i) + ", " + std::to_string(101 + 2 * i) + "]}\n";
  }
  const std::string path = ladder::testing::temp_dir() + "/distinct.jsonl";
  std::ofstream(path) << distinct;
  auto apart = run(path, "mc-distinct");
  ASSERT_EQ(apart.size(), 8u);
  for (const auto& r : apart) {
    ASSERT_TRUE(r["verified"].get<bool>()) << r.dump();
    EXPECT_EQ(r["server_timings"]["cached_tokens"].get<int>(), 0) << r.dump();
  }
}

TEST(ReplayE2E, UnreachableServerIsReportedNotHidden) {
  std::vector<WorkloadRequest> reqs{story(0, "a", "x")};
  const std::string wl = write_workload("dead.jsonl", reqs);
  const std::string out = ladder::testing::temp_dir() + "/dead-out";
  // Port 1 on loopback: nothing listens there.
  auto res = ladder::testing::run_command({ladder::testing::ladder_bin(), "replay", "--endpoint", "http://127.0.0.1:1",
                                           "--workload", wl, "--out", out, "--quiet", "--timeout", "5",
                                           "--wait-ready", "0"});
  // Everything is written, and the exit says the run failed.
  ASSERT_EQ(res.exit_code, 2) << res.err;
  EXPECT_NE(res.err.find("1 requests failed"), std::string::npos) << res.err;
  EXPECT_NE(res.out.find("error          x1    HTTP 0"), std::string::npos) << res.out;
  auto results = read_jsonl(out + "/requests.jsonl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["http_status"], 0);
  EXPECT_NE(results[0]["error"].get<std::string>().find("connect"), std::string::npos);
  EXPECT_FALSE(results[0]["verified"].get<bool>());
  // Waiting for readiness gives up with a reason.
  res = ladder::testing::run_command({ladder::testing::ladder_bin(), "replay", "--endpoint", "http://127.0.0.1:1",
                                      "--workload", wl, "--out", out, "--wait-ready", "0.5"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("not ready"), std::string::npos) << res.err;
  // A bad flag is an error with a message, not a crash.
  res = ladder::testing::run_command({ladder::testing::ladder_bin(), "replay", "--endpoint", "ftp://x", "--workload",
                                      wl, "--out", out});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("http://"), std::string::npos);
}

}  // namespace
}  // namespace ladder::harness
