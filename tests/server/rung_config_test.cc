// `ladder serve --rung 3`: the approximate-KV rung as a named configuration
// that /v1/models reports (and so the replay record's fingerprint covers).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "http_test_client.h"
#include "test_support.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

json served_config(const ServerProcess& srv) {
  const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
  return models["data"][0]["ladder"]["config"];
}

TEST(ServeRung, RungThreeServesAndReportsTheApproximateKvConfiguration) {
  {
    ServerProcess exact({"-m", stories()});
    ASSERT_TRUE(exact.ok());
    EXPECT_EQ(served_config(exact)["kv_approximate"], false);
    EXPECT_EQ(served_config(exact)["kv_format"], "f16-b16-kt");
  }
  ServerProcess rung3({"-m", stories(), "--rung", "3", "--kv-memory-mib", "4"});
  ASSERT_TRUE(rung3.ok());
  const json cfg = served_config(rung3);
  EXPECT_EQ(cfg["kv_approximate"], true);
  EXPECT_EQ(cfg["kv_format"], "q4-b16-kt");
  // 4 MiB in q4 bytes: 51 staging slots of 10240 bytes off the top, then
  // 4480-byte blocks (tests/engine/kv_format_engine_test.cc has the arithmetic).
  EXPECT_EQ(cfg["kv_blocks"], ((4 << 20) - 51 * 10240) / 4480);
  const HttpReply r = http_request(rung3.port(), "POST", "/v1/completions",
                                   json{{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 16);

  ServerProcess q8({"-m", stories(), "--rung", "3", "--kv-dtype", "q8"});
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ(served_config(q8)["kv_approximate"], true);
  EXPECT_EQ(served_config(q8)["kv_format"], "q8-b16-kt");
}

TEST(ServeRung, ContradictoryRungAndFormatAreUsageErrors) {
  auto r = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--rung", "1", "--kv-dtype", "q4"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rung 1"), std::string::npos) << r.err;
  r = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--rung", "3", "--kv-dtype", "f16"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rung 3"), std::string::npos) << r.err;
  r = run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--rung", "2"});
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace ladder::testing
