// References and verification against real `ladder serve` processes:
// a saved reference holds what the model produced (checked against the
// golden outputs in models/README.md and stories260K.top5.json), rung 1
// verifies exactly against its own reference at concurrency 1, 8 and 64
// with chunked prefill and preemption, and a real approximation (the same
// weights at lower precision) is caught -- exact mode fails the requests that
// differ, approx mode scores them, and the per-slice table names the slice
// that suffered.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>

#include "common/sanitizers.h"
#include "harness/text_synth.h"
#include "harness/workload.h"
#include "ladder_server.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;
using testing::LadderServer;
using testing::read_json;
using testing::read_jsonl;
using testing::write_workload;

std::map<int, json> by_line(const std::vector<json>& rows) {
  std::map<int, json> out;
  for (const auto& r : rows) out[r["source_line"].get<int>()] = r;
  return out;
}

// The reference's entries by their workload line.
std::map<int, json> reference_by_line(const json& ref) {
  std::map<int, json> out;
  for (const auto& e : ref["requests"]) out[e["source_line"].get<int>()] = e;
  return out;
}

TEST(ReferenceE2E, SavedReferenceHoldsWhatTheModelProduced) {
  LadderServer server({"--kv-dtype", "f32"});  // the golden logprobs are an F32 computation
  ASSERT_FALSE(server.url().empty());
  std::vector<WorkloadRequest> reqs{testing::completion(0, "a", "Once upon a time", 16, "story"),
                                    testing::completion(0.02, "b", "Once upon a time", 16, "story")};
  reqs[0].expect = Expectation{Expectation::Kind::kSubstring, "Lily"};
  reqs[1].seed = 7;
  WorkloadRequest chat;
  chat.t = 0.04;
  chat.tenant = "b";
  chat.slice = "chat";
  chat.max_tokens = 8;
  chat.messages = {{"user", "Hi"}};
  reqs.push_back(chat);
  const std::string wl = write_workload("ref-own.jsonl", reqs);
  const std::string dir = ladder::testing::temp_dir();
  auto res = testing::replay(server.url(), wl, dir + "/ref-save", {"--save-reference", dir + "/ref.json", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err << res.out;

  const json ref = read_json(dir + "/ref.json");
  EXPECT_EQ(ref["kind"], "ladder.reference");
  EXPECT_EQ(ref["top_k"], 5);
  const json record = read_json(dir + "/ref-save/record.json");
  EXPECT_EQ(ref["fingerprint_sha256"], record["configuration"]["fingerprint_sha256"]);
  auto entries = reference_by_line(ref);
  auto results = by_line(read_jsonl(dir + "/ref-save/requests.jsonl"));
  ASSERT_EQ(entries.size(), 3u);
  // Golden greedy continuation (models/README.md) and its top-5 logprobs
  // (stories260K.top5.json, an independent implementation).
  const std::string golden = ", there was a little girl named Lily. She loved to play outside in the park.";
  const json top5 = read_json(ladder::testing::shared_path("models/stories260K.top5.json"));
  for (int line : {1, 2}) {
    const json& e = entries.at(line);
    EXPECT_EQ(e["finish_reason"], "length");
    EXPECT_EQ(golden.rfind(e["text"].get<std::string>(), 0), 0u) << e["text"];
    EXPECT_EQ(e["text"], results.at(line)["text"]);
    ASSERT_EQ(e["logprobs"].size(), 16u);  // one position per output token
    for (size_t k = 0; k < top5["greedy_steps"].size(); ++k) {
      const json& want = top5["greedy_steps"][k]["top5_logprobs"];
      const json& got = e["logprobs"][k]["top"];
      ASSERT_EQ(got.size(), 5u);
      // The values the server computed, recorded at the right positions: a
      // shifted or misread position is off by nats, not by the engine's
      // few-thousandths from the reference implementation.
      for (size_t j = 0; j < 5; ++j) EXPECT_NEAR(got[j][1].get<double>(), want[j][1].get<double>(), 1e-2) << k;
    }
    if (!e["token_ids"].is_null()) {
      const std::vector<int> ids{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337};
      EXPECT_EQ(e["token_ids"].get<std::vector<int>>(), ids);
    }
  }
  EXPECT_EQ(entries.at(3)["slice"], "chat");

  // Against its own reference: every request identical, quality per slice and tenant.
  res = testing::replay(server.url(), wl, dir + "/ref-check", {"--reference", dir + "/ref.json", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const json check = read_json(dir + "/ref-check/record.json");
  const json& v = check["configuration"]["verification"];
  EXPECT_EQ(v["mode"], "exact");
  EXPECT_EQ(v["reference_fingerprint_sha256"], ref["fingerprint_sha256"]);
  EXPECT_EQ(v["same_server_as_reference"], true);
  for (const auto& r : read_jsonl(dir + "/ref-check/requests.jsonl")) {
    EXPECT_TRUE(r["verified"].get<bool>()) << r.dump();
    EXPECT_EQ(r["quality"]["exact_match"], true);
    if (ref["requests"][0]["token_ids"].is_null()) {
      EXPECT_EQ(r["quality"]["compared_by"], "text bytes");  // and the reason says so
      EXPECT_NE(r["quality"]["reason"].get<std::string>().find("no token ids"), std::string::npos);
    } else {
      EXPECT_EQ(r["quality"]["compared_by"], "token ids");
    }
  }
  const json& quality = check["runs"][0]["quality"];
  EXPECT_EQ(quality["per_slice"].size(), 2u);
  EXPECT_EQ(quality["per_tenant"].size(), 2u);
  EXPECT_NE(res.out.find("quality (worst first)"), std::string::npos) << res.out;

  // A reference from another workload is refused, not silently ignored.
  std::vector<WorkloadRequest> other{testing::completion(0, "a", "The cat sat", 4, "x")};
  res = testing::replay(server.url(), write_workload("ref-other.jsonl", other), dir + "/ref-other",
                        {"--reference", dir + "/ref.json", "--quiet"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("holds none of this workload's requests"), std::string::npos) << res.err;
}

// Prompts of 20..60 tokens from real prose (chunked under --max-batch-tokens
// 16), 40 output tokens each: 64 of them need far more KV blocks than 24.
std::vector<WorkloadRequest> pressure_workload() {
  TextSynthesizer synth(ladder::testing::read_file(ladder::testing::shared_path("text/war-and-peace.txt")), 2.0);
  std::vector<WorkloadRequest> reqs;
  for (int i = 0; i < 64; ++i) {
    WorkloadRequest r = testing::completion(0, i % 2 ? "a" : "b", synth.passage(static_cast<uint64_t>(i), 40 + (i % 5) * 20),
                                            40, i % 3 ? "prose" : "prose-long");
    reqs.push_back(r);
  }
  return reqs;
}

TEST(ReferenceE2E, Rung1IsExactAtAnyConcurrencyWithChunkingAndPreemption) {
  const std::string wl = write_workload("pressure.jsonl", pressure_workload());
  const std::string dir = ladder::testing::temp_dir();
  {
    LadderServer plain;
    ASSERT_FALSE(plain.url().empty());
    auto res = testing::replay(plain.url(), wl, dir + "/p-ref",
                               {"--save-reference", dir + "/p-ref.json", "--concurrency", "1", "--quiet"});
    ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
  }
  // Chunked prefill (16 tokens a step) and a KV pool too small for 64 at once.
  LadderServer tight({"--max-batch-tokens", "16", "--kv-blocks", "24", "--max-running", "64"});
  ASSERT_FALSE(tight.url().empty());
  const json ref = read_json(dir + "/p-ref.json");
  if (ref["requests"][0]["token_ids"].is_null()) {
    std::fprintf(stderr, "[note] the server sends no token ids yet (return_token_ids): compared by text\n");
  }
#if LADDER_TSAN
  // ThreadSanitizer checks the concurrent replays; one request at a time (a
  // minute of its ~40x slower compute) has nothing for it to find.
  const std::vector<const char*> concurrencies = {"8", "64"};
#else
  const std::vector<const char*> concurrencies = {"1", "8", "64"};
#endif
  for (const char* concurrency : concurrencies) {
    const std::string out = dir + "/p-" + concurrency;
    auto res = testing::replay(tight.url(), wl, out,
                               {"--reference", dir + "/p-ref.json", "--concurrency", concurrency, "--quiet"});
    ASSERT_EQ(res.exit_code, 0) << concurrency << res.err << res.out;
    int preempted = 0, chunked = 0;
    for (const auto& r : read_jsonl(out + "/requests.jsonl")) {
      EXPECT_TRUE(r["verified"].get<bool>()) << "concurrency " << concurrency << ": " << r.dump();
      EXPECT_EQ(r["quality"]["exact_match"], true);
      preempted += r["server_timings"]["preemptions"].get<int>() > 0;
      chunked += r["prompt_tokens"].get<int>() > 16;
    }
    EXPECT_GT(chunked, 32) << "prompts must be longer than one prefill chunk";
    if (std::string(concurrency) == "64") {
      EXPECT_GT(preempted, 0) << "the KV pool should have forced preemption";
    }
  }
}

struct Approximation {
  std::string reference_url;  // full precision
  std::string candidate_url;  // the same weights, lower precision
};

// Exact mode fails exactly the requests whose output differs; approx mode
// scores them; the per-slice table puts the slice that suffered first.
void expect_approximation_caught(const Approximation& a, const std::string& name) {
  std::vector<WorkloadRequest> reqs;
  const char* prompts[] = {"Once upon a time", "One day, a little boy", "The cat sat", "Lily and Ben were",
                           "There was a big dog", "In the park, Tim", "Sue had a red ball", "The sun was hot and"};
  for (const char* p : prompts) {
    reqs.push_back(testing::completion(0, "a", p, 1, "one-token"));
    reqs.push_back(testing::completion(0, "b", p, 48, "long"));
  }
  const std::string wl = write_workload(name + ".jsonl", reqs);
  const std::string dir = ladder::testing::temp_dir() + "/" + name;
  auto res = testing::replay(a.reference_url, wl, dir + "-ref", {"--save-reference", dir + "-ref.json", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  // What the candidate produces, measured without any reference.
  res = testing::replay(a.candidate_url, wl, dir + "-plain", {"--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto ref = by_line(read_jsonl(dir + "-ref/requests.jsonl"));
  const auto plain = by_line(read_jsonl(dir + "-plain/requests.jsonl"));
  std::map<int, bool> same;
  std::map<std::string, int> differing;
  for (const auto& [line, r] : ref) {
    same[line] = r["text"] == plain.at(line)["text"];
    if (!same[line]) ++differing[r["slice"].get<std::string>()];
  }
  ASSERT_GT(differing["long"] + differing["one-token"], 0) << "the approximation changed nothing: the test proves nothing";
  ASSERT_NE(differing["long"], differing["one-token"]) << "both slices suffered alike: no slice to single out";
  const std::string worst = differing["long"] > differing["one-token"] ? "long" : "one-token";

  res = testing::replay(a.candidate_url, wl, dir + "-exact", {"--reference", dir + "-ref.json", "--quiet"});
  for (const auto& r : read_jsonl(dir + "-exact/requests.jsonl")) {
    const int line = r["source_line"].get<int>();
    EXPECT_EQ(r["verified"].get<bool>(), same.at(line)) << r.dump();
    EXPECT_EQ(r["quality"]["exact_match"].get<bool>(), same.at(line)) << r.dump();
  }
  json record = read_json(dir + "-exact/record.json");
  EXPECT_EQ(record["runs"][0]["quality"]["per_slice"][0]["name"], worst);

  const std::string policy = dir + "-policy.toml";
  std::ofstream(policy) << "[default]\nmin_match = 0.9\n[slice.one-token]\nmin_match = 1.0\n";
  res = testing::replay(a.candidate_url, wl, dir + "-approx",
                        {"--reference", dir + "-ref.json", "--verify", "approx", "--policy", policy, "--quiet"});
  for (const auto& r : read_jsonl(dir + "-approx/requests.jsonl")) {
    const json& q = r["quality"];
    const int line = r["source_line"].get<int>();
    EXPECT_EQ(q["mode"], "approx");
    EXPECT_EQ(q["match_fraction"].get<double>() == 1.0, same.at(line)) << r.dump();
    if (!same.at(line)) {
      ASSERT_FALSE(q["first_divergence"].is_null()) << r.dump();
      EXPECT_GE(q["kl_positions"].get<int>(), 1) << r.dump();
      EXPECT_EQ(q["kl_positions"].get<int>(), std::min(q["first_divergence"].get<int>() + 1,
                                                       std::min(q["reference_units"].get<int>(), q["candidate_units"].get<int>())))
          << r.dump();
      EXPECT_GE(q["kl_max"].get<double>(), q["kl_mean"].get<double>());
      if (q["match_fraction"].get<double>() < (r["slice"] == "one-token" ? 1.0 : 0.9)) {
        EXPECT_FALSE(q["pass"].get<bool>());
      }
    }
  }
  record = read_json(dir + "-approx/record.json");
  const json& slices = record["runs"][0]["quality"]["per_slice"];
  EXPECT_EQ(slices[0]["name"], worst);
  EXPECT_EQ(slices[0]["thresholds"]["min_match"], worst == "one-token" ? 1.0 : 0.9);
  EXPECT_EQ(record["configuration"]["verification"]["same_server_as_reference"], false);
  EXPECT_NE(res.out.find("slice " + worst), std::string::npos);
  EXPECT_LT(res.out.find("slice " + worst), res.out.find("slice " + std::string(worst == "long" ? "one-token" : "long")));
}

// The same random weights written at F32 and at Q4_0 by `ladder synth`.
TEST(ReferenceE2E, ARealApproximationIsCaught) {
  const std::string dir = ladder::testing::temp_dir();
  for (const char* dtype : {"f32", "q4_0"}) {
    auto res = ladder::testing::run_command({ladder::testing::ladder_bin(), "synth", "--preset", "tiny", "--seed", "7",
                                             "--dtype", dtype, "-o", dir + "/synth-" + dtype + ".gguf"});
    ASSERT_EQ(res.exit_code, 0) << res.err;
  }
  LadderServer full({"--served-model-name", "m"}, dir + "/synth-f32.gguf");
  LadderServer quantized({"--served-model-name", "m"}, dir + "/synth-q4_0.gguf");
  ASSERT_FALSE(full.url().empty());
  ASSERT_FALSE(quantized.url().empty());
  expect_approximation_caught({full.url(), quantized.url()}, "synth-q4");
}

// The issue's own case: the trained model requantized F32 -> Q4_0.
TEST(ReferenceE2E, ARequantizedRealModelIsCaught) {
  const std::string out = ladder::testing::temp_dir() + "/stories-q4_0.gguf";
  auto res = ladder::testing::run_command({ladder::testing::ladder_bin(), "quantize",
                                           ladder::testing::shared_dir() + "/models/stories260K.gguf", out, "--dtype",
                                           "q4_0", "--fallback", "auto"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  LadderServer full;
  LadderServer quantized({"--served-model-name", "stories260K"}, out);
  ASSERT_FALSE(full.url().empty());
  ASSERT_FALSE(quantized.url().empty());
  expect_approximation_caught({full.url(), quantized.url()}, "stories-q4");
}

}  // namespace
}  // namespace ladder::harness
