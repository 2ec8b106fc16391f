// Helpers of the `ladder serve` suites (serve_test.cc, tenant_serve_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "http_test_client.h"
#include "test_support.h"

namespace ladder::testing {

using nlohmann::json;
using Ms = std::chrono::milliseconds;

// ../shared/models/README.md: greedy, BOS + "Once upon a time", 64 tokens.
inline const char* kGoldenText =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
    "ball. She wanted to play with it, but it was too high.\nLily's mom said";

inline std::string stories() { return shared_path("models/stories260K.gguf"); }

// A model slow enough (~10-30 ms a token here) for requests to overlap.
inline const std::string& slow_model() { return slow_test_model(); }

inline std::string write_file(const std::string& name, const std::string& text) {
  std::string p = temp_dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

inline json post_json(int port, const std::string& path, const json& body, const std::map<std::string, std::string>& h = {},
               Ms timeout = Ms(30000)) {
  HttpReply r = http_request(port, "POST", path, body.dump(), h, timeout);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body, nullptr, false);
}

// An OpenAI-style error body with this status, param (empty: null) and
// code (empty: any).
inline void expect_error(const HttpReply& r, int status, const std::string& param, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  json doc = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("error")) << r.body;
  const json& e = doc["error"];
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["type"].is_string());
  if (param.empty()) {
    EXPECT_TRUE(e["param"].is_null()) << r.body;
  } else {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
}

// Two tenants with half the slots reserved each; beta has a TTFT target.
inline const char* kTenants = R"(
[[tenant]]
name = "alpha"
api_keys = ["key-alpha"]
reserved_share = 0.5

[[tenant]]
name = "beta"
api_keys = ["key-beta"]
reserved_share = 0.5
[tenant.slo]
ttft_ms = 3000
)";

}  // namespace ladder::testing
