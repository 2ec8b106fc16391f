// `ladder serve --kv-evict`: the policy and budget enter the published
// effective configuration (and so the replay record's fingerprint) as the
// approximate-KV rung; a long completion runs past the budget; roles and
// rung 1 refuse it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "http_test_client.h"
#include "test_support.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

TEST(ServeKvEvict, PolicyIsPublishedAndLongCompletionsRun) {
  {
    ServerProcess plain({"-m", stories()});
    ASSERT_TRUE(plain.ok());
    const json models = json::parse(http_request(plain.port(), "GET", "/v1/models").body);
    EXPECT_EQ(models["data"][0]["ladder"]["kv_evict"], "none");
    EXPECT_EQ(models["data"][0]["ladder"]["config"]["kv_evict"]["policy"], "none");
  }
  ServerProcess srv({"-m", stories(), "--kv-evict", "window", "--kv-budget", "48", "--kv-sinks", "8"});
  ASSERT_TRUE(srv.ok());
  const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
  const json& ladder = models["data"][0]["ladder"];
  EXPECT_EQ(ladder["kv_evict"], "window");
  EXPECT_EQ(ladder["config"]["kv_approximate"], true);
  EXPECT_EQ(ladder["config"]["kv_evict"],
            (json{{"policy", "window"}, {"budget_tokens", 48}, {"sink_tokens", 8}}));
  EXPECT_EQ(ladder["config"]["kv_format"], "f16-b16-kt");  // eviction alone keeps the format
  const HttpReply r = http_request(
      srv.port(), "POST", "/v1/completions",
      json{{"prompt", "Once upon a time"}, {"max_tokens", 100}, {"temperature", 0}, {"ignore_eos", true}}
          .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 100);
}

TEST(ServeKvEvict, RolesAndRungOneRefuseIt) {
  auto r = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--role", "prefill",
                        "--kv-evict", "window", "--kv-budget", "64"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--role both only"), std::string::npos) << r.err;
  r = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--rung", "1", "--kv-evict",
                   "window", "--kv-budget", "64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rung 1"), std::string::npos) << r.err;
  r = run_command(
      {ladder_bin(), "serve", "-m", stories(), "--port", "0", "--kv-evict", "window", "--kv-budget", "8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("must be >= 32"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ladder::testing
