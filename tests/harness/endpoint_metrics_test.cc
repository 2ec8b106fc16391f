// Endpoint URLs, the Prometheus text the replay samples for queue depth, and
// the request body it sends.
#include <gtest/gtest.h>

#include "net/http_client.h"
#include "harness/replay.h"
#include "harness/replay_command.h"

namespace ladder::harness {
namespace {

TEST(Endpoint, Parses) {
  auto a = net::parse_endpoint("http://127.0.0.1:8080/v1/");
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, "8080");
  EXPECT_EQ(a->base_path, "");
  auto b = net::parse_endpoint("http://gpu-box/proxy/v1");
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->port, "80");
  EXPECT_EQ(b->base_path, "/proxy");
  auto c = net::parse_endpoint("https://api.example.com/v1");
  ASSERT_TRUE(c.is_ok());
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->port, "443");
  EXPECT_EQ(c->url(), "https://api.example.com:443");
  EXPECT_FALSE(a->tls);
  EXPECT_FALSE(net::parse_endpoint("ftp://x").is_ok());
  EXPECT_FALSE(net::parse_endpoint("127.0.0.1:8080").is_ok());
  EXPECT_FALSE(net::parse_endpoint("http://:80").is_ok());
  EXPECT_FALSE(net::parse_endpoint("http://h:8o").is_ok());
}

TEST(Prometheus, QueueDepthIsFoundAndSummed) {
  const std::string text =
      "# HELP ladder_queue_depth Requests waiting for admission.\n"
      "# TYPE ladder_queue_depth gauge\n"
      "ladder_queue_depth 3\n"
      "ladder_requests_total{tenant=\"a\",status=\"200\"} 17\n"
      "ladder_e2e_seconds_bucket{le=\"+Inf\"} 9\n";
  auto m = parse_prometheus_text(text);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m.at("ladder_requests_total{tenant=\"a\",status=\"200\"}"), 17);
  auto q = find_queue_depth(m);
  EXPECT_EQ(q.first, "ladder_queue_depth");
  EXPECT_DOUBLE_EQ(q.second, 3);
  // vLLM's gauge is per model: the labels are summed.
  auto v = find_queue_depth(parse_prometheus_text(
      "vllm:num_requests_waiting{model_name=\"a\"} 2\nvllm:num_requests_waiting{model_name=\"b\"} 5\n"));
  EXPECT_EQ(v.first, "vllm:num_requests_waiting");
  EXPECT_DOUBLE_EQ(v.second, 7);
  // Counters and histograms are not queue depths.
  EXPECT_EQ(find_queue_depth(parse_prometheus_text("x_queue_seconds_sum 4\nx_queue_total 9\n")).first, "");
}

TEST(ReplayFlags, SloAndRates) {
  auto s = parse_slo("ttft_ms=250,e2e_ms=4000");
  ASSERT_TRUE(s.is_ok());
  EXPECT_DOUBLE_EQ(*s->ttft_ms, 250);
  EXPECT_FALSE(s->tpot_ms.has_value());
  EXPECT_DOUBLE_EQ(*s->e2e_ms, 4000);
  EXPECT_FALSE(parse_slo("ttft_ms=-1").is_ok());
  EXPECT_FALSE(parse_slo("latency=5").is_ok());
  EXPECT_FALSE(parse_slo("ttft_ms").is_ok());
  auto r = parse_rates("4,1,2.5");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, (std::vector<double>{1, 2.5, 4}));
  EXPECT_FALSE(parse_rates("1,,2").is_ok());
  EXPECT_FALSE(parse_rates("0").is_ok());
}

TEST(RequestBody, StreamsWithUsage) {
  WorkloadRequest r;
  r.max_tokens = 7;
  auto body = build_request_body(r, {}, "hello", "m", BodyOptions{});
  EXPECT_EQ(body["prompt"], "hello");
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_FALSE(body.contains("logprobs"));
  EXPECT_FALSE(body.contains("return_token_ids"));
  r.messages = {{"user", "x"}};
  auto chat = build_request_body(r, {{"user", "a"}, {"assistant", "b"}, {"user", "x"}}, "", "m", BodyOptions{true});
  EXPECT_EQ(chat["messages"].size(), 3u);
  EXPECT_FALSE(chat.contains("prompt"));
  EXPECT_EQ(chat["ignore_eos"], true);
}

// Reference runs ask for token ids and top-5 logprobs in each API's own form,
// with the workload's seed.
TEST(RequestBody, AsksForTokenIdsAndTopLogprobs) {
  WorkloadRequest r;
  r.seed = 42;
  BodyOptions extras;
  extras.token_ids = true;
  extras.top_logprobs = 5;
  auto completion = build_request_body(r, {}, "p", "m", extras);
  EXPECT_EQ(completion["return_token_ids"], true);
  EXPECT_EQ(completion["logprobs"], 5);
  EXPECT_FALSE(completion.contains("top_logprobs"));
  EXPECT_EQ(completion["seed"], 42);
  r.messages = {{"user", "x"}};
  auto chat = build_request_body(r, r.messages, "", "m", extras);
  EXPECT_EQ(chat["logprobs"], true);
  EXPECT_EQ(chat["top_logprobs"], 5);
  EXPECT_EQ(chat["return_token_ids"], true);
}

// The deadline sent is the TTFT SLO, else the E2E one; none without either.
TEST(RequestBody, DeadlineComesFromTheSlo) {
  Slo s;
  EXPECT_FALSE(deadline_ms_of(s).has_value());
  s.tpot_ms = 50;
  EXPECT_FALSE(deadline_ms_of(s).has_value());
  s.e2e_ms = 4000;
  EXPECT_DOUBLE_EQ(*deadline_ms_of(s), 4000);
  s.ttft_ms = 300;
  EXPECT_DOUBLE_EQ(*deadline_ms_of(s), 300);
}

TEST(Prometheus, ProcessCpuSeconds) {
  auto m = parse_prometheus_text("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n");
  ASSERT_TRUE(process_cpu_seconds(m).has_value());
  EXPECT_DOUBLE_EQ(*process_cpu_seconds(m), 12.5);
  EXPECT_FALSE(process_cpu_seconds(parse_prometheus_text("ladder_queue_depth 3\n")).has_value());
}

}  // namespace
}  // namespace ladder::harness
