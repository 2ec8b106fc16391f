// deploy/ checked offline against the built binary: the manifests' flags,
// probes, ports and annotations against `ladder serve|route --help`, and
// every metric the Grafana dashboard queries against the /metrics output of
// a running router, prefill worker and decode worker (check_deploy.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "http_test_client.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

std::string save(const std::string& name, const std::string& text) {
  const std::string p = temp_dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

TEST(Deploy, ManifestsAndDashboardMatchTheServer) {
  const std::string model = shared_path("models/stories260K.gguf");
  ServerProcess prefill({"-m", model, "--role", "prefill", "--threads", "1"});
  ServerProcess decode({"-m", model, "--role", "decode", "--threads", "1", "--kv-host", "127.0.0.1"});
  ASSERT_TRUE(prefill.ok() && decode.ok());
  ServerProcess router({"-m", model, "--prefill", "http://127.0.0.1:" + std::to_string(prefill.port()),
                        "--decode", "http://127.0.0.1:" + std::to_string(decode.port())},
                       true, "route");
  ASSERT_TRUE(router.ok());
  const std::string body =
      R"({"prompt":"Once upon a time, there was a little girl named Lily. She loved to play",)"
      R"("max_tokens":4})";
  ASSERT_EQ(http_request(router.port(), "POST", "/v1/completions", body).status, 200);
  std::vector<std::string> args = {"python3", std::string(LADDER_TEST_SOURCE_DIR) + "/route/check_deploy.py",
                                   std::string(LADDER_TEST_SOURCE_DIR) + "/../deploy", "--metrics"};
  // The router counts the request once it settles it, which may come just
  // after the reply (the per-tenant counters the dashboard queries have no
  // sample before it): wait for the count, then scrape every server.
  wait_metric(router.port(), "ladder_requests_total{tenant=\"anonymous\",status=\"200\"}", 1);
  int i = 0;
  for (int port : {router.port(), prefill.port(), decode.port()}) {
    HttpReply m =
        http_request(port, "GET", "/metrics", "", {{"Authorization", std::string("Bearer ") + kTestAdminKey}});
    ASSERT_EQ(m.status, 200) << m.body;
    args.push_back(save("metrics-" + std::to_string(i++) + ".txt", m.body));
  }
  CommandResult serve_help = run_command({ladder_bin(), "serve", "--help"});
  CommandResult route_help = run_command({ladder_bin(), "route", "--help"});
  ASSERT_EQ(serve_help.exit_code, 0);
  ASSERT_EQ(route_help.exit_code, 0);
  args.insert(args.end(), {"--serve-help", save("serve-help.txt", serve_help.out), "--route-help",
                           save("route-help.txt", route_help.out)});
  CommandResult r = run_command(args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" 0 problems"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ladder::testing
