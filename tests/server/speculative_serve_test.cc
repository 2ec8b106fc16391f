// Speculative decoding through `ladder serve`: the same tokens as plain
// serving, the accepted-token figures in `usage` and on /metrics, the rung
// in the effective configuration, and clear errors for a bad draft.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <future>
#include <string>
#include <vector>

#include "http_test_client.h"
#include "test_support.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

const char* kGoldenText =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
    "ball. She wanted to play with it, but it was too high.\nLily's mom said";

json complete(int port, const std::string& prompt, int max_tokens) {
  json req = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  HttpReply r = http_request(port, "POST", "/v1/completions", req.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body, nullptr, false);
}

TEST(ServeSpeculative, EveryDraftTokenOfTheFullModelIsAcceptedAndReported) {
  // early-exit over all five layers: the draft is the target, so every
  // draft token is accepted and a cycle emits k + 1 = 5 tokens.
  ServerProcess srv({"-m", stories(), "--spec", "early-exit:5", "--spec-k", "4", "--spec-fixed"});
  ASSERT_TRUE(srv.ok());
  const json r = complete(srv.port(), "Once upon a time", 64);
  EXPECT_EQ(r["choices"][0]["text"], kGoldenText);
  const json& usage = r["usage"];
  EXPECT_EQ(usage["completion_tokens"], 64);
  const int accepted = usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int>();
  EXPECT_GE(accepted, 48);
  EXPECT_EQ(usage["completion_tokens_details"]["rejected_prediction_tokens"], 0);
  const json& spec = usage["ladder_speculative"];
  EXPECT_EQ(spec["accepted"], accepted);
  EXPECT_EQ(spec["proposed"], accepted);
  EXPECT_GE(spec["tokens_per_cycle"].get<double>(), 4.5);
  EXPECT_EQ(spec["k"], 4);
  EXPECT_EQ(spec["enabled"], true);
  EXPECT_GT(spec["cycles"].get<int>(), 0);

  // The record's fingerprint sees the rung and its settings.
  const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
  const json& cfg = models["data"][0]["ladder"]["config"];
  EXPECT_EQ(cfg["speculative"]["draft"], "early-exit:5");
  EXPECT_EQ(cfg["speculative"]["k"], 4);
  EXPECT_EQ(cfg["speculative"]["adaptive"], false);

  const std::string m =
      http_request(srv.port(), "GET", "/metrics", "", {{"Authorization", std::string("Bearer ") + kTestAdminKey}}).body;
  EXPECT_EQ(metric_value(m, "ladder_spec_accepted_tokens_total"), accepted);
  EXPECT_EQ(metric_value(m, "ladder_spec_proposed_tokens_total"), accepted);
  EXPECT_EQ(metric_value(m, "ladder_spec_cycles_total"), spec["cycles"].get<int>());
  EXPECT_GE(metric_value(m, "ladder_spec_tokens_per_cycle"), 4.5);
  EXPECT_EQ(metric_value(m, "ladder_spec_k"), 4);
}

TEST(ServeSpeculative, ConcurrentRequestsGetPlainServingsTokens) {
  const std::vector<std::string> prompts = {
      "Once upon a time", "Lily had a red ball. She liked the red ball. Lily had a red ball",
      "Tom went to the park", "The cat sat on the mat. The cat sat", "One day, a little bird",
      "Mom said, \"Let's go home.\" Mom said"};
  std::vector<std::string> plain;
  {
    ServerProcess srv({"-m", stories()});
    ASSERT_TRUE(srv.ok());
    for (const auto& p : prompts) plain.push_back(complete(srv.port(), p, 40)["choices"][0]["text"]);
    // Without a draft: rung 1, no ladder_speculative, zero accepted.
    const json r = complete(srv.port(), prompts[0], 4);
    EXPECT_FALSE(r["usage"].contains("ladder_speculative"));
    EXPECT_EQ(r["usage"]["completion_tokens_details"]["accepted_prediction_tokens"], 0);
    const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
    EXPECT_EQ(models["data"][0]["ladder"]["config"]["speculative"]["draft"], "off");
  }
  for (const char* spec : {"ngram", "self-q4"}) {
    ServerProcess srv({"-m", stories(), "--spec", spec, "--spec-fixed"});
    ASSERT_TRUE(srv.ok());
    std::vector<std::future<json>> replies;
    for (const auto& p : prompts) {
      replies.push_back(std::async(std::launch::async, [&srv, p] { return complete(srv.port(), p, 40); }));
    }
    int64_t proposed = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const json r = replies[i].get();
      EXPECT_EQ(r["choices"][0]["text"], plain[i]) << spec << ": " << prompts[i];
      proposed += r["usage"]["ladder_speculative"]["proposed"].get<int64_t>();
    }
    EXPECT_GT(proposed, 0) << spec;
  }
}

TEST(ServeSpeculative, ABadDraftIsAClearError) {
  auto bad = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--spec", "medusa"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--spec must be ngram, draft:FILE, self-q4, early-exit:L or off"), std::string::npos)
      << bad.err;
  auto other_vocab = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--spec",
                                  "draft:" + shared_path("models/llama-2-tiny-random.gguf")});
  EXPECT_EQ(other_vocab.exit_code, 1);
  EXPECT_NE(other_vocab.err.find("has a vocabulary of 32000 tokens; the target"), std::string::npos)
      << other_vocab.err;
  auto too_deep = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--spec", "early-exit:9"});
  EXPECT_EQ(too_deep.exit_code, 1);
  EXPECT_NE(too_deep.err.find("L must be in [1, 5]"), std::string::npos) << too_deep.err;
}

}  // namespace
}  // namespace ladder::testing
