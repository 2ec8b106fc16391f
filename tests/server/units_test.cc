// Pure pieces of the server: request validation, tenants,
// error bodies and the Prometheus text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/deadline.h"
#include "server/frontend.h"
#include "server/json_fields.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/tenants.h"

namespace ladder::server {
namespace {

TEST(RequestParsing, ValidCompletion) {
  CompletionRequest r;
  auto err = parse_completion_request(
      R"({"model":"m","prompt":"hi","max_tokens":5,"temperature":0,"top_p":0.9,"top_k":3,"min_p":0.1,)"
      R"("seed":-1,"stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":-0.5,"logprobs":2,)"
      R"("stream":true,"stream_options":{"include_usage":true},"user":"u"})",
      &r);
  ASSERT_FALSE(err) << err->body();
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hi");
  EXPECT_EQ(*r.options.max_tokens, 5);
  EXPECT_EQ(r.options.sampling.temperature, 0.0f);
  EXPECT_EQ(r.options.sampling.top_k, 3);
  EXPECT_EQ(*r.options.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(r.options.stop.size(), 2u);
  EXPECT_TRUE(r.options.logprobs);
  EXPECT_EQ(r.options.sampling.top_logprobs, 2);
  EXPECT_TRUE(r.options.include_usage);
  EXPECT_EQ(r.options.user, "u");
}

TEST(RequestParsing, TokenIdPrompt) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[1,403,407]})", &r));
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(*r.prompts[0].tokens, (std::vector<int32_t>{1, 403, 407}));
}

// OpenAI's batched completions: a list of strings, or of token-id lists.
TEST(RequestParsing, SeveralPrompts) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":["a", "b c"]})", &r));
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].text, "b c");
  CompletionRequest ids;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[[1, 2], [3]]})", &ids));
  ASSERT_EQ(ids.prompts.size(), 2u);
  EXPECT_EQ(*ids.prompts[1].tokens, std::vector<int32_t>{3});
}

struct BadCase {
  const char* body;
  const char* param;
  const char* code;
};

TEST(RequestParsing, RejectionsNameTheField) {
  const BadCase cases[] = {
      {R"({"prompt": "x", "temperature": "hot"})", "temperature", "invalid_value"},
      {R"({"prompt": "x", "temperature": 3})", "temperature", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": 1e300})", "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": 99999999999999999999999})", "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "n": 17})", "n", "invalid_value"},
      {R"({"prompt": "x", "n": 0})", "n", "invalid_value"},
      {R"({"prompt": "x", "logit_bias": {"a": 1}})", "logit_bias", "invalid_value"},
      {R"({"prompt": "x", "logit_bias": {"5": 100.5}})", "logit_bias", "invalid_value"},
      {R"({"prompt": "x", "logit_bias": [1]})", "logit_bias", "invalid_value"},
      {R"({"prompt": "x", "response_format": {"type": "yaml"}})", "response_format.type", "invalid_value"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema"}})", "response_format.json_schema", "invalid_value"},
      {R"({"prompt": "x", "response_format": {"type": "json_object", "extra": 1}})", "response_format.extra",
       "unsupported_parameter"},
      {R"({"prompt": "x", "stop": [1]})", "stop", "invalid_value"},
      {R"({"prompt": "x", "stop": ""})", "stop", "invalid_value"},
      {R"({"prompt": "x", "top_p": 0})", "top_p", "invalid_value"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs", "invalid_value"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options", "invalid_value"},
      {R"({"prompt": "x", "seed": "1"})", "seed", "invalid_value"},
      {R"({"prompt": ["a", 2]})", "prompt", "invalid_value"},
      {R"({"prompt": ["a", []]})", "prompt", "invalid_value"},
      {R"({"prompt": [[1], [-1]]})", "prompt", "invalid_value"},
      {R"({"prompt": []})", "prompt", "invalid_value"},
      {R"({"prompt": [1, -2]})", "prompt", "invalid_value"},
      {R"({"prompt": 7})", "prompt", "invalid_value"},
      {R"({"max_tokens": 5})", "prompt", "invalid_value"},
      {R"([1,2])", "", "invalid_json"},
      {R"({"prompt": "x",)", "", "invalid_json"},
      {"{\"prompt\": \"\xff\xfe\"}", "", "invalid_json"},
  };
  for (const auto& c : cases) {
    CompletionRequest r;
    auto err = parse_completion_request(c.body, &r);
    ASSERT_TRUE(err) << c.body;
    EXPECT_EQ(err->http_status, 400) << c.body;
    EXPECT_EQ(err->param, c.param) << c.body;
    EXPECT_EQ(err->code, c.code) << c.body;
  }
}

TEST(RequestParsing, Chat) {
  ChatRequest r;
  ASSERT_FALSE(parse_chat_request(
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],)"
      R"("max_completion_tokens":3,"logprobs":true,"top_logprobs":2})",
      &r));
  ASSERT_EQ(r.messages.size(), 2u);
  // Parts stay parts: the template decides how they are joined.
  EXPECT_EQ(r.messages[1]["content"].size(), 2u);
  EXPECT_EQ(r.messages[1]["content"][1]["text"], "b");
  EXPECT_EQ(*r.options.max_tokens, 3);
  EXPECT_EQ(r.options.sampling.top_logprobs, 2);
  ChatRequest bad;
  auto err = parse_chat_request(R"({"messages":[{"role":"wizard","content":"x"}]})", &bad);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "messages[0].role");
  err = parse_chat_request(R"({"messages":[]})", &bad);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "messages");
  err = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", &bad);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "top_logprobs");
}

TEST(RequestParsing, AParameterThatIsNotHonouredIsRefusedByName) {
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  struct Case {
    std::string body;
    std::string param;
  };
  const std::vector<Case> chat = {
      {"{" + msgs + R"(,"frobnicate":1})", "frobnicate"},
      {"{" + msgs + R"(,"store":true})", "store"},
      {"{" + msgs + R"(,"service_tier":"flex"})", "service_tier"},
      {"{" + msgs + R"(,"modalities":["text","audio"]})", "modalities"},
      {"{" + msgs + R"(,"stream":true,"stream_options":{"include_usage":true,"x":1}})", "stream_options.x"},
      {R"({"messages":[{"role":"user","content":"x","weird":1}]})", "messages[0].weird"},
  };
  for (const auto& c : chat) {
    ChatRequest r;
    auto err = parse_chat_request(c.body, &r);
    ASSERT_TRUE(err) << c.body;
    EXPECT_EQ(err->http_status, 400) << c.body;
    EXPECT_EQ(err->param, c.param) << c.body;
  }
  // Neutral values of such parameters are accepted: Ladder does what they ask.
  ChatRequest ok;
  EXPECT_FALSE(parse_chat_request(
      "{" + msgs + R"(,"store":false,"service_tier":"auto","modalities":["text"],"user":"u","return_token_ids":true})",
      &ok));
  EXPECT_TRUE(ok.options.return_token_ids);
  CompletionRequest c;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","echo":true})", &c));
  EXPECT_TRUE(c.options.echo);
  CompletionRequest with_logprobs;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","echo":true,"logprobs":1})", &with_logprobs));
  EXPECT_TRUE(with_logprobs.options.echo && with_logprobs.options.logprobs);
  CompletionRequest mixed;
  auto err = parse_completion_request(R"({"prompt":"x","messages":[]})", &mixed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "messages");
  EXPECT_EQ(err->code, "unsupported_parameter");
}

// Arrays and objects nested `levels` deep around one number.
std::string nested_json(int levels, char open, char close) {
  return std::string(static_cast<size_t>(levels), open) + "1" +
         std::string(static_cast<size_t>(levels), close);
}

TEST(RequestParsing, BodiesNestedPastTheLimitAreRefusedBeforeAnyRecursion) {
  nlohmann::ordered_json doc;
  EXPECT_TRUE(parse_json_within_depth(nested_json(kMaxJsonDepth, '[', ']'), &doc));
  EXPECT_EQ(doc.dump(), nested_json(kMaxJsonDepth, '[', ']'));
  EXPECT_FALSE(parse_json_within_depth(nested_json(kMaxJsonDepth + 1, '[', ']'), &doc));
  EXPECT_TRUE(doc.is_null());
  // Objects count as arrays do, and half a million levels (the most a 1 MiB
  // body holds) are refused as well.
  std::string objects;
  for (int i = 0; i < kMaxJsonDepth; ++i) objects += R"({"a":)";
  objects += "1" + std::string(kMaxJsonDepth, '}');
  EXPECT_TRUE(parse_json_within_depth(objects, &doc));
  EXPECT_FALSE(parse_json_within_depth("{\"a\":" + objects + "}", &doc));
  EXPECT_FALSE(parse_json_within_depth(nested_json(500000, '[', ']'), &doc));
  // Malformed text still throws the library's error (parse_body makes it a 400).
  EXPECT_THROW(parse_json_within_depth(std::string("[[1]"), &doc), nlohmann::ordered_json::parse_error);

  const auto err = parse_body(R"({"prompt":"a","stop":)" + nested_json(100000, '[', ']') + "}", &doc);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->http_status, 400);
  EXPECT_NE(err->message.find("more than 256 levels deep"), std::string::npos) << err->message;
  EXPECT_FALSE(parse_body(R"({"prompt":"a","stop":)" + nested_json(200, '[', ']') + "}", &doc).has_value());

  // A schema sent as a string is parsed under the same limit, and named.
  CompletionRequest req;
  const nlohmann::json ok = {{"prompt", "a"}, {"guided_json", R"({"type":"object"})"}};
  EXPECT_FALSE(parse_completion_request(ok.dump(), &req).has_value());
  const nlohmann::json deep = {{"prompt", "a"}, {"guided_json", nested_json(100000, '[', ']')}};
  const auto refused = parse_completion_request(deep.dump(), &req);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->param, "guided_json");
  EXPECT_NE(refused->message.find("more than 256 levels deep"), std::string::npos) << refused->message;
}

TEST(ApiError, OpenAiShape) {
  ApiError e = invalid_field("temperature", "bad");
  auto doc = nlohmann::json::parse(e.body());
  EXPECT_EQ(doc["error"]["message"], "bad");
  EXPECT_EQ(doc["error"]["type"], "invalid_request_error");
  EXPECT_EQ(doc["error"]["param"], "temperature");
  EXPECT_EQ(doc["error"]["code"], "invalid_value");
  doc = nlohmann::json::parse(not_found_error("x").body());
  EXPECT_TRUE(doc["error"]["param"].is_null());
  EXPECT_EQ(api_error_from_status(out_of_range("long")).code, "context_length_exceeded");
  EXPECT_EQ(api_error_from_status(resource_exhausted("full")).http_status, 429);
  EXPECT_EQ(rate_limited("x", "queue_full", 0).retry_after_s, 1);
}

TEST(Tenants, LoadsAndAuthenticates) {
  auto reg = TenantRegistry::from_toml_string(R"(
[[tenant]]
name = "alpha"
api_keys = ["ka1", "ka2"]
priority = 2
reserved_share = 0.5
max_concurrent = 4
max_queued = 8
[tenant.slo]
ttft_ms = 250
tpot_ms = 50

[[tenant]]
name = "beta"
api_keys = ["kb"]
cache_scope = "shared-beta"
)");
  ASSERT_TRUE(reg.is_ok()) << reg.status().to_string();
  EXPECT_EQ(reg->size(), 2u);
  EXPECT_EQ(reg->authenticate("ka2"), 0);
  EXPECT_EQ(reg->authenticate("kb"), 1);
  EXPECT_EQ(reg->authenticate("kb "), -1);
  EXPECT_EQ(reg->authenticate(""), -1);
  const TenantConfig& a = reg->tenant(0);
  EXPECT_EQ(a.priority, 2);
  EXPECT_DOUBLE_EQ(a.reserved_share, 0.5);
  EXPECT_EQ(a.max_concurrent, 4);
  EXPECT_EQ(a.max_queued, 8);
  EXPECT_DOUBLE_EQ(a.slo.ttft_ms, 250);
  EXPECT_EQ(a.cache_scope, "alpha");
  EXPECT_EQ(reg->tenant(1).cache_scope, "shared-beta");
  EXPECT_TRUE(reg->requires_key());
  EXPECT_FALSE(TenantRegistry::anonymous().requires_key());
}

TEST(Tenants, RejectsBadFiles) {
  const char* bad[] = {
      "",                                                                  // no tenants
      "[[tenant]]\nname = \"a\"\n",                                        // no keys
      "[[tenant]]\nname = \"a\"\napi_keys = [\"k\"]\nreserved_share = 1.5\n",
      "[[tenant]]\nname = \"a\"\napi_keys = [\"k\"]\n[[tenant]]\nname = \"b\"\napi_keys = [\"k\"]\n",  // shared key
      ("[[tenant]]\nname = \"a\"\napi_keys = [\"k\"]\nreserved_share = 0.6\n"
       "[[tenant]]\nname = \"b\"\napi_keys = [\"j\"]\nreserved_share = 0.6\n"),  // shares > 1
      "[[tenant]\nname = ",                                                 // TOML syntax
      "[[tenant]]\nname = \"a\"\napi_keys = [\"k\"]\npriority = \"high\"\n",
  };
  for (const char* text : bad) {
    auto reg = TenantRegistry::from_toml_string(text);
    EXPECT_FALSE(reg.is_ok()) << text;
  }
}

TEST(Metrics, PrometheusText) {
  ServerMetrics m;
  RequestRecord r;
  r.tenant = "alpha";
  r.http_status = 200;
  r.completion_tokens = 7;
  r.cached_tokens = 16;
  r.ttft_s = 0.003;
  r.e2e_s = 0.2;
  r.itl_s = {0.001, 0.02};
  r.finished = true;
  r.slo_met = true;
  m.record(r);
  r.http_status = 429;
  r.slo_met = false;
  r.finished = false;
  r.rejected_early = true;
  r.itl_s.clear();
  r.ttft_s = -1;
  m.record(r);
  GaugeSnapshot g;
  g.state = "ready";
  g.kv_blocks_used = 3;
  std::string text = m.render(g, /*per_tenant=*/true);
  EXPECT_NE(text.find("ladder_requests_total{tenant=\"alpha\",status=\"200\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ladder_requests_total{tenant=\"alpha\",status=\"429\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_prefix_cache_hit_tokens_total{tenant=\"alpha\"} 32\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_slo_met_requests_total{tenant=\"alpha\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_rejected_early_total{tenant=\"alpha\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("process_cpu_seconds_total "), std::string::npos);
  // Without the right to see tenants: the same figures, unlabelled.
  const std::string anon = m.render(g, /*per_tenant=*/false);
  EXPECT_EQ(anon.find("alpha"), std::string::npos) << anon;
  EXPECT_NE(anon.find("ladder_requests_total{status=\"200\"} 1\n"), std::string::npos) << anon;
  EXPECT_NE(anon.find("ladder_slo_met_requests_total 1\n"), std::string::npos) << anon;
  EXPECT_NE(text.find("ladder_kv_blocks_used 3\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_server_state{state=\"ready\"} 1\n"), std::string::npos);
  // 0.003 s falls in the 0.005 bucket and above; one TTFT observation only.
  EXPECT_NE(text.find("ladder_ttft_seconds_bucket{le=\"0.0025\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_ttft_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_ttft_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_itl_seconds_count 2\n"), std::string::npos);
  EXPECT_NE(text.find("ladder_itl_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace ladder::server

namespace ladder::server {
namespace {

// The one SLO judgement of serve and route: the first token by the plan's
// deadline, TPOT (the slowest choice's) within the tenant's target; only a
// finished request can meet it.
TEST(MeetsSlo, FirstTokenByTheDeadlineAndTpotWithinTheTarget) {
  GenerationPlan plan;
  plan.arrival = engine::Clock::now();
  plan.request.scheduling.deadline = deadline_after(plan.arrival, 500);
  const TenantSlo slo{500, 50};
  RequestRecord rec;
  rec.finished = true;
  rec.ttft_s = 0.4;
  rec.tpot_s = 0.04;
  EXPECT_TRUE(meets_slo(rec, plan, slo));
  rec.ttft_s = 0.6;  // past the deadline
  EXPECT_FALSE(meets_slo(rec, plan, slo));
  rec.ttft_s = 0.4;
  rec.tpot_s = 0.06;  // over the TPOT target
  EXPECT_FALSE(meets_slo(rec, plan, slo));
  rec.tpot_s = -1;  // one token: no TPOT to judge
  EXPECT_TRUE(meets_slo(rec, plan, slo));
  rec.finished = false;
  EXPECT_FALSE(meets_slo(rec, plan, slo));
  // No deadline and no TPOT target: any finished request meets it.
  plan.request.scheduling.deadline = engine::Clock::time_point::max();
  rec.finished = true;
  rec.ttft_s = 100;
  rec.tpot_s = 10;
  EXPECT_TRUE(meets_slo(rec, plan, TenantSlo{}));
}

TEST(Deadline, OneRuleForWhatMaySendOne) {
  EXPECT_EQ(parse_deadline_ms("250.5"), 250.5);
  for (const char* bad : {"", "0", "-3", "1e10", "12ms", "nan"}) EXPECT_FALSE(parse_deadline_ms(bad)) << bad;
  EXPECT_FALSE(remaining_ms(engine::Clock::time_point::max()));
  EXPECT_EQ(*remaining_ms(engine::Clock::now() - std::chrono::seconds(1)), 1.0);  // passed in flight: 1 ms
  const double left = *remaining_ms(deadline_after(engine::Clock::now(), 10000));
  EXPECT_GT(left, 9000);
  EXPECT_LE(left, 10000);
}

}  // namespace
}  // namespace ladder::server
