// A test suite that shares one `ladder serve` on stories260K, started before
// its first test and stopped after its last. --tool-preamble off: the tools
// preamble would not fit the model's 128-token context, so tools reach the
// model through a forced call's grammar alone
// (Serve.ToolsReachATemplateThatDoesNotRenderThem covers the preamble).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "http_test_client.h"
#include "test_support.h"

namespace ladder::testing {

class StoriesServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"-m", shared_path("models/stories260K.gguf"), "--tool-preamble", "off"});
  }
  static void TearDownTestSuite() { server_.reset(); }

  // One request; a status other than `expect` fails the test. The parsed
  // body (a stream's as its text), or null when the status differs or
  // nothing came back.
  static nlohmann::json call(const std::string& method, const std::string& path, const nlohmann::json& body,
                             int expect = 200) {
    HttpReply r = http_request(server_->port(), method, path, body.is_null() ? "" : body.dump());
    EXPECT_EQ(r.status, expect) << method << " " << path << " " << body.dump() << " -> " << r.body;
    if (r.status != expect || r.body.empty()) return nullptr;
    if (r.status == 200 && body.is_object() && body.value("stream", false)) return r.body;
    return nlohmann::json::parse(r.body);
  }
  static nlohmann::json post(const std::string& path, const nlohmann::json& body, int expect = 200) {
    return call("POST", path, body, expect);
  }

  static inline std::unique_ptr<ServerProcess> server_;
};

}  // namespace ladder::testing
