// `ladder serve --kv-host-mib`: the host KV tier's size enters the published
// configuration; over real HTTP, five prompt families whose prefixes (20
// blocks) exceed a 12-block pool hit the tier in later rounds, answer as a
// server without the tier does, and the tier's counters appear on /metrics.
// Without the prefix cache the tier is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_test_client.h"
#include "test_support.h"
#include "serve_test_util.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

// BOS and n - 1 pseudo-random ids in [3, 512).
std::vector<int32_t> ids(size_t n, uint64_t seed) {
  std::vector<int32_t> t = {1};
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 7;
  while (t.size() < n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t.push_back(static_cast<int32_t>(3 + (x >> 33) % 509));
  }
  return t;
}

// Three rounds of five families: a 64-token prefix of the family's own and
// 8 tokens that change every round. Returns each completion's text and
// cached prompt tokens.
std::vector<std::pair<std::string, int64_t>> replay(int port) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (int round = 0; round < 3; ++round) {
    for (int family = 0; family < 5; ++family) {
      std::vector<int32_t> prompt = ids(64, 100 + static_cast<uint64_t>(family));
      const std::vector<int32_t> suffix = ids(9, 1000 + static_cast<uint64_t>(round * 5 + family));
      prompt.insert(prompt.end(), suffix.begin() + 1, suffix.end());
      const HttpReply r = http_request(port, "POST", "/v1/completions",
                                       json{{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}}.dump());
      EXPECT_EQ(r.status, 200) << r.body;
      if (r.status != 200) return out;
      const json body = json::parse(r.body);
      out.emplace_back(body["choices"][0]["text"].get<std::string>(),
                       body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>());
    }
  }
  return out;
}

TEST(ServeKvHost, TierHitsBeyondThePoolWithTheSameAnswers) {
  std::vector<std::pair<std::string, int64_t>> plain;
  {
    ServerProcess srv({"-m", stories(), "--kv-blocks", "12"});
    ASSERT_TRUE(srv.ok());
    const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
    EXPECT_EQ(models["data"][0]["ladder"]["kv_host_bytes"], 0);
    EXPECT_EQ(models["data"][0]["ladder"]["config"]["kv_host_bytes"], 0);
    plain = replay(srv.port());
    const std::string metrics = http_request(srv.port(), "GET", "/metrics").body;
    EXPECT_EQ(metric_value(metrics, "ladder_kv_host_bytes_capacity"), -1);  // not rendered without a tier
    EXPECT_EQ(metric_value(metrics, "ladder_engine_prefix_cache_hit_tokens_total"), 0);
  }
  ServerProcess srv({"-m", stories(), "--kv-blocks", "12", "--kv-host-mib", "1"});
  ASSERT_TRUE(srv.ok());
  const json models = json::parse(http_request(srv.port(), "GET", "/v1/models").body);
  EXPECT_EQ(models["data"][0]["ladder"]["kv_host_bytes"], 1 << 20);
  EXPECT_EQ(models["data"][0]["ladder"]["config"]["kv_host_bytes"], 1 << 20);
  EXPECT_EQ(models["data"][0]["ladder"]["config"]["kv_approximate"], false);  // the tier is exact
  const auto tiered = replay(srv.port());
  ASSERT_EQ(tiered.size(), 15u);
  ASSERT_EQ(plain.size(), 15u);
  for (size_t i = 0; i < tiered.size(); ++i) {
    EXPECT_EQ(tiered[i].first, plain[i].first) << i;
    EXPECT_EQ(plain[i].second, 0) << i;
    EXPECT_EQ(tiered[i].second, i < 5 ? 0 : 64) << i;  // rounds 2 and 3: the whole prefix
  }
  const std::string metrics = http_request(srv.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "ladder_engine_prefix_cache_hit_tokens_total"), 10 * 64);
  EXPECT_EQ(metric_value(metrics, "ladder_kv_host_prefetched_blocks_total") +
                metric_value(metrics, "ladder_kv_host_prefetched_late_blocks_total"),
            40);
  EXPECT_EQ(metric_value(metrics, "ladder_kv_host_recomputed_blocks_total"), 20);
  EXPECT_GT(metric_value(metrics, "ladder_kv_host_offloaded_blocks_total"), 0);
  EXPECT_EQ(metric_value(metrics, "ladder_kv_host_dropped_blocks_total"), 0);
  // Whole blocks: an f16 block of stories260K is 5 layers x (K + V) x 16
  // tokens x 4 KV heads x 8 dims x 2 bytes = 10240 bytes; 1 MiB holds 102.
  EXPECT_EQ(metric_value(metrics, "ladder_kv_host_bytes_capacity"), 102 * 10240);
  EXPECT_GT(metric_value(metrics, "ladder_kv_host_bytes_used"), 0);
}

TEST(ServeKvHost, WithoutThePrefixCacheItIsRefused) {
  const auto r =
      run_command({ladder_bin(), "serve", "-m", stories(), "--port", "0", "--kv-host-mib", "1", "--no-prefix-cache"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--kv-host-mib"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--no-prefix-cache"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ladder::testing
