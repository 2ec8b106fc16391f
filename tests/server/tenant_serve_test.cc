// `ladder serve` with tenants, through real HTTP: API keys and prefix-cache
// isolation, no first-token advantage from another tenant's cache, and who
// may read per-tenant /metrics.
#include "serve_test_util.h"

namespace ladder::testing {
namespace {


TEST(Serve, AuthAndTenantCacheIsolation) {
  ServerProcess srv({"-m", stories(), "--tenants", write_file("tenants.toml", kTenants)});
  ASSERT_TRUE(srv.ok());
  int p = srv.port();
  std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 2}}.dump();
  expect_error(http_request(p, "POST", "/v1/completions", body), 401, "", "invalid_api_key");
  expect_error(http_request(p, "POST", "/v1/completions", body, {{"Authorization", "Bearer key-alph"}}), 401, "", "");
  EXPECT_EQ(http_request(p, "GET", "/health").status, 200);  // no key needed
  expect_error(http_request(p, "GET", "/v1/models"), 401, "", "invalid_api_key");
  EXPECT_EQ(http_request(p, "GET", "/v1/models", "", {{"Authorization", "Bearer key-beta"}}).status, 200);
  expect_error(http_request(p, "GET", "/v1/models/stories260K"), 401, "", "invalid_api_key");
  // /metrics follows the key too (its global counters are the tenants' business).
  expect_error(http_request(p, "GET", "/metrics"), 401, "", "invalid_api_key");
  expect_error(http_request(p, "GET", "/metrics", "", {{"Authorization", "Bearer key-alph"}}), 401, "", "");
  EXPECT_EQ(http_request(p, "GET", "/metrics", "", {{"Authorization", "Bearer key-beta"}}).status, 200);

  // A prompt of several full KV blocks.
  std::string prompt;
  for (int i = 0; i < 4; ++i) prompt += "Lily and Ben played in the park with a red ball. ";
  json req = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
  auto cached = [&](const std::string& key) {
    json r = post_json(p, "/v1/completions", req, {{"Authorization", "Bearer " + key}});
    return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  };
  EXPECT_EQ(cached("key-alpha"), 0);
  int64_t alpha_hit = cached("key-alpha");
  EXPECT_GT(alpha_hit, 0) << "the same tenant's repeat must hit its prefix cache";
  EXPECT_EQ(cached("key-beta"), 0) << "another tenant must never hit alpha's blocks";
  // Per-tenant counters are updated as each request's bookkeeping ends,
  // which may trail its response by a moment.
  std::string text = wait_metric(p, "ladder_prefix_cache_hit_tokens_total{tenant=\"beta\"}", 0);
  text = wait_metric(p, "ladder_prefix_cache_hit_tokens_total{tenant=\"alpha\"}", static_cast<double>(alpha_hit));
  EXPECT_EQ(metric_value(text, "ladder_prefix_cache_hit_tokens_total{tenant=\"alpha\"}"), alpha_hit) << text;
  EXPECT_EQ(metric_value(text, "ladder_prefix_cache_hit_tokens_total{tenant=\"beta\"}"), 0) << text;
  EXPECT_EQ(cached("key-beta"), alpha_hit) << "beta's own repeat hits its own blocks";
}

TEST(Serve, NoTtftAdvantageFromAnotherTenantsCache) {
  // On a model whose prefill is slow enough to see: alpha's repeat skips
  // 256 of 272 prompt tokens and answers sooner; beta's identical prompt
  // gets no hit and pays the full prefill again.
  ServerProcess srv({"-m", slow_model(), "--threads", "1", "--tenants", write_file("iso.toml", kTenants)});
  ASSERT_TRUE(srv.ok());
  std::string prompt;
  for (int i = 0; i < 15; ++i) prompt += "Lily and Ben played in the park with a red ball. ";
  json req = {{"prompt", prompt}, {"max_tokens", 1}};
  // A full prefill of this prompt takes ~15 s under ThreadSanitizer: the
  // comparison is between TTFTs, so the client waits as long as it takes.
  auto run = [&](const std::string& key, int64_t* cached) {
    json r = post_json(srv.port(), "/v1/completions", req, {{"Authorization", "Bearer " + key}}, Ms(180000));
    *cached = r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
    return r["ladder"]["ttft_ms"].get<double>();
  };
  int64_t cached = -1;
  double alpha_cold = run("key-alpha", &cached);
  EXPECT_EQ(cached, 0);
  double alpha_warm = run("key-alpha", &cached);
  EXPECT_GT(cached, 0);
  double beta_cold = run("key-beta", &cached);
  EXPECT_EQ(cached, 0);
  EXPECT_GT(beta_cold, alpha_warm) << "beta must not profit from alpha's cached prefix";
  std::printf("TTFT: alpha cold %.1f ms, alpha warm %.1f ms, beta (same prompt) %.1f ms\n", alpha_cold, alpha_warm,
              beta_cold);
}

TEST(Serve, MetricsShowTenantsOnlyToAnAdminOrTheMetricsListener) {
  ServerProcess srv({"-m", stories(), "--tenants", write_file("private.toml", kTenants), "--metrics-port", "0"});
  ASSERT_TRUE(srv.ok());
  const int p = srv.port();
  json req = {{"prompt", "Once upon a time"}, {"max_tokens", 2}};
  post_json(p, "/v1/completions", req, {{"Authorization", "Bearer key-alpha"}});
  post_json(p, "/v1/completions", req, {{"Authorization", "Bearer key-beta"}});
  // Each request is counted once its bookkeeping ends, which may trail its
  // response, in either order: wait for both.
  wait_metric(p, "ladder_requests_total{tenant=\"alpha\",status=\"200\"}", 1);
  wait_metric(p, "ladder_requests_total{tenant=\"beta\",status=\"200\"}", 1);
  // No key: nothing (the main port's /metrics follows the API key).
  EXPECT_EQ(http_request(p, "GET", "/metrics").status, 401);
  // A tenant's own key: totals only, no tenant names.
  {
    const std::string text = http_request(p, "GET", "/metrics", "", {{"Authorization", "Bearer key-alpha"}}).body;
    EXPECT_EQ(text.find("alpha"), std::string::npos) << text;
    EXPECT_EQ(text.find("beta"), std::string::npos) << text;
    EXPECT_EQ(text.find("tenant="), std::string::npos) << text;
    EXPECT_EQ(metric_value(text, "ladder_requests_total{status=\"200\"}"), 2) << text;
  }
  // The admin key sees them.
  EXPECT_EQ(metric_value(metrics(p), "ladder_requests_total{tenant=\"alpha\",status=\"200\"}"), 1);
  // So does the separate metrics listener (on a private network), which
  // serves nothing else.
  // Its port (0 = any free one) is in the log, written before the model loads.
  const std::string log = srv.log();
  const std::string mark = "metrics listener on http://";
  const size_t at = log.find(mark);
  ASSERT_NE(at, std::string::npos) << log;
  const int metrics_port = std::atoi(log.c_str() + log.find(':', at + mark.size()) + 1);
  ASSERT_GT(metrics_port, 0) << log;
  EXPECT_EQ(metric_value(http_request(metrics_port, "GET", "/metrics").body,
                         "ladder_requests_total{tenant=\"beta\",status=\"200\"}"),
            1);
  EXPECT_EQ(http_request(metrics_port, "POST", "/v1/completions", req.dump()).status, 404);
  // Response ids are random: nothing in one tells how many came before.
  json a = post_json(p, "/v1/completions", req, {{"Authorization", "Bearer key-alpha"}});
  json b = post_json(p, "/v1/completions", req, {{"Authorization", "Bearer key-alpha"}});
  const std::string ida = a["id"], idb = b["id"];
  ASSERT_EQ(ida.size(), std::string("cmpl-").size() + 24);
  int differing = 0;
  for (size_t i = 5; i < ida.size(); ++i) differing += ida[i] != idb[i];
  EXPECT_GT(differing, 12) << ida << " " << idb;
}

}  // namespace
}  // namespace ladder::testing
