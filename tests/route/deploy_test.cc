// deploy/ checked offline against the built binary: the manifests' flags,
// probes, ports and annotations against `ladder serve|route --help`, and
// every metric the Grafana dashboard queries against the /metrics output of
// a running router, prefill worker and decode worker (check_deploy.py).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

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
  const std::map<std::string, std::string> admin = {
      {"Authorization", std::string("Bearer ") + kTestAdminKey}};
  // A server counts a request when it settles it, which may come just after
  // the client has read the whole reply (the per-tenant counters have no
  // sample before their first request): scrape until some output counts the
  // request, then check what was scraped.
  std::vector<std::string> scraped;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (bool counted = false; !counted && std::chrono::steady_clock::now() < deadline;) {
    if (!scraped.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    scraped.clear();
    for (int port : {router.port(), prefill.port(), decode.port()}) {
      HttpReply m = http_request(port, "GET", "/metrics", "", admin);
      ASSERT_EQ(m.status, 200);
      counted |= m.body.find("\nladder_requests_total{") != std::string::npos;
      scraped.push_back(m.body);
    }
  }
  for (size_t i = 0; i < scraped.size(); ++i) args.push_back(save("metrics-" + std::to_string(i) + ".txt", scraped[i]));
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
