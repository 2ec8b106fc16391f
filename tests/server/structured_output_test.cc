// What a client asks of the output through the OpenAI API, through real HTTP
// on stories260K (a model that never writes JSON on its own): response_format
// (JSON mode and JSON Schema), forced tool calls (whole and streamed),
// logit_bias, n > 1. Every check reads the output independently of the code
// that produced it: nlohmann parses the JSON and the test checks the schema's
// rules itself.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>

#include "stories_server_suite.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

class StructuredOutput : public StoriesServerSuite {};

// The schema's rules, checked by hand.
void expect_person(const json& v) {
  ASSERT_TRUE(v.is_object()) << v.dump();
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << v.dump();
  EXPECT_LE(v["name"].get<std::string>().size(), 12u);  // maxLength counts characters; ASCII-only model here
  ASSERT_TRUE(v.contains("age") && v["age"].is_number_integer()) << v.dump();
  EXPECT_GE(v["age"].get<int64_t>(), 0);
  EXPECT_LE(v["age"].get<int64_t>(), 150);
  ASSERT_TRUE(v.contains("pet") && v["pet"].is_string()) << v.dump();
  const std::set<std::string> pets = {"cat", "dog", "fish"};
  EXPECT_TRUE(pets.count(v["pet"].get<std::string>())) << v.dump();
  for (const auto& [k, _] : v.items()) {
    EXPECT_TRUE(k == "name" || k == "age" || k == "pet") << "unexpected key " << k;
  }
}

const json kPersonSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "pet": {"enum": ["cat", "dog", "fish"]}
  },
  "required": ["name", "age", "pet"],
  "additionalProperties": false
})");

TEST_F(StructuredOutput, JsonSchemaOutputParsesAndValidates) {
  for (int seed = 0; seed < 6; ++seed) {
    json req = {{"messages", {{{"role", "user"}, {"content", "Tell me about a person."}}}},
                {"max_tokens", 70},
                {"seed", seed},
                {"temperature", seed == 0 ? 0.0 : 1.0},
                {"response_format",
                 {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", kPersonSchema}}}}}};
    json r = post("/v1/chat/completions", req);
    ASSERT_FALSE(r.is_null());
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
    const std::string text = r["choices"][0]["message"]["content"].get<std::string>();
    json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(v.is_discarded()) << "not JSON: " << text;
    expect_person(v);
  }
}

TEST_F(StructuredOutput, JsonModeOutputIsAnObject) {
  // JSON mode constrains the output to an object; this model's objects run
  // long, so the closing brace gets a push from logit_bias (token 128 is "}"
  // in stories260K's vocabulary, as `ladder tokenize` shows).
  int stopped = 0;
  for (int seed = 0; seed < 4; ++seed) {
    json req = {{"prompt", "Once upon a time"},
                {"max_tokens", 120},
                {"seed", seed},
                {"temperature", 0.7},
                {"logit_bias", {{"128", 8}}},
                {"response_format", {{"type", "json_object"}}}};
    json r = post("/v1/completions", req);
    ASSERT_FALSE(r.is_null());
    const std::string text = r["choices"][0]["text"].get<std::string>();
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text[0], '{') << text;
    if (r["choices"][0]["finish_reason"] == "stop") {
      ++stopped;
      json v = json::parse(text, nullptr, false);
      ASSERT_FALSE(v.is_discarded()) << "not JSON: " << text;
      EXPECT_TRUE(v.is_object()) << text;
    }
  }
  EXPECT_GE(stopped, 2) << "JSON mode outputs should close within 120 tokens with the push";
}

TEST_F(StructuredOutput, RefusesSchemasItCannotEnforceByName) {
  json req = {{"messages", {{{"role", "user"}, {"content", "x"}}}},
              {"response_format",
               {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}, {"patternProperties", {{"^x", {{"type", "string"}}}}}}}}}}}};
  HttpReply r = http_request(server_->port(), "POST", "/v1/chat/completions", req.dump());
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "response_format");
  EXPECT_NE(r.body.find("patternProperties"), std::string::npos) << r.body;
  // Too deep to compile in bounded time: refused at once, the limit named.
  // 100 levels of schema (200 of JSON, inside the body's limit of 256;
  // deeper bodies are refused before any field is read, serve_test.cc).
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"type": "object", "properties": {"a": )";
  deep += R"({"type": "integer"})";
  for (int i = 0; i < 100; ++i) deep += "}}";
  r = http_request(server_->port(), "POST", "/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", )"
                   R"("json_schema": {"name": "deep", "schema": )" + deep + "}}}");
  ASSERT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "response_format");
  EXPECT_NE(r.body.find("deeper than 64 levels"), std::string::npos) << r.body.substr(0, 300);
  req["response_format"] = {{"type", "xml"}};
  r = http_request(server_->port(), "POST", "/v1/chat/completions", req.dump());
  ASSERT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "response_format.type");
}

// The model's context is 128 tokens and it spells the Hermes tags a byte at
// a time, so the calls are kept short; max_tokens is left to the default
// (what the context allows).
const json kWeatherTools = json::parse(R"([{"type": "function", "function": {
  "name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                 "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"]}}},
  {"type": "function", "function": {"name": "get_time",
   "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}])");

void expect_weather_call(const std::string& name, const std::string& arguments) {
  EXPECT_EQ(name, "get_weather");
  json args = json::parse(arguments, nullptr, false);
  ASSERT_FALSE(args.is_discarded()) << arguments;
  ASSERT_TRUE(args["city"].is_string()) << arguments;
  EXPECT_LE(args["city"].get<std::string>().size(), 8u);
  EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << arguments;
}

TEST_F(StructuredOutput, ForcedToolCallComesBackAsToolCalls) {
  json req = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
              {"temperature", 0},
              {"tools", kWeatherTools},
              {"parallel_tool_calls", false},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}};
  json r = post("/v1/chat/completions", req);
  ASSERT_FALSE(r.is_null());
  const json& choice = r["choices"][0];
  // The call's closing tag may not fit the 128-token context (the model
  // spells tags a byte at a time): then the call is complete but the output
  // was cut, and OpenAI's finish_reason for that is "length".
  const bool cut = choice["finish_reason"] == "length" && r["usage"]["prompt_tokens"].get<int64_t>() +
                                                               r["usage"]["completion_tokens"].get<int64_t>() ==
                                                           128;
  EXPECT_TRUE(choice["finish_reason"] == "tool_calls" || cut) << r.dump();
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.dump();
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  expect_weather_call(call["function"]["name"], call["function"]["arguments"]);
  EXPECT_TRUE(choice["message"]["content"].is_null()) << r.dump();

  // Streamed: the deltas assemble into the same call.
  req["stream"] = true;
  json body = post("/v1/chat/completions", req);
  ASSERT_FALSE(body.is_null());
  std::string name, arguments, finish;
  int headers = 0;
  for (const std::string& payload : sse_payloads(body.get<std::string>())) {
    if (payload == "[DONE]") continue;
    json chunk = json::parse(payload);
    for (const json& c : chunk["choices"]) {
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      if (!c["delta"].contains("tool_calls")) continue;
      for (const json& d : c["delta"]["tool_calls"]) {
        EXPECT_EQ(d["index"], 0);
        if (d.contains("id")) {
          ++headers;
          name = d["function"]["name"];
        }
        arguments += d["function"]["arguments"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(finish, choice["finish_reason"].get<std::string>());
  expect_weather_call(name, arguments);
  EXPECT_EQ(arguments, call["function"]["arguments"].get<std::string>()) << "greedy: the same call both ways";
}

TEST_F(StructuredOutput, RequiredToolChoiceCallsOneOfTheTools) {
  json req = {{"messages", {{{"role", "user"}, {"content", "Help."}}}},
              {"temperature", 0},
              {"tools", kWeatherTools},
              {"parallel_tool_calls", false},
              {"tool_choice", "required"}};
  json r = post("/v1/chat/completions", req);
  ASSERT_FALSE(r.is_null());
  ASSERT_EQ(r["choices"][0]["message"]["tool_calls"].size(), 1u) << r.dump();
  const std::string name = r["choices"][0]["message"]["tool_calls"][0]["function"]["name"];
  EXPECT_TRUE(name == "get_weather" || name == "get_time") << name;
  // Bad tool choices are named.
  req["tool_choice"] = {{"type", "function"}, {"function", {{"name", "launch"}}}};
  HttpReply bad = http_request(server_->port(), "POST", "/v1/chat/completions", req.dump());
  ASSERT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["param"], "tool_choice");
  req.erase("tools");
  req["tool_choice"] = "required";
  bad = http_request(server_->port(), "POST", "/v1/chat/completions", req.dump());
  ASSERT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["param"], "tool_choice");
}

// Output cut by max_tokens anywhere in forced parallel calls: complete calls
// come back clean (arguments that parse), a cut one is never a call of the
// whole response, and nothing of a tag reaches content, streamed or not.
TEST_F(StructuredOutput, CutOffToolCallsNeverLeakTagsOrBrokenArguments) {
  json req = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
              {"temperature", 0},
              {"tools", kWeatherTools},
              {"parallel_tool_calls", true},
              {"tool_choice", "required"}};
  int complete_calls = 0;
  const int64_t prompt = post("/v1/chat/completions", req)["usage"]["prompt_tokens"];
  for (int max_tokens = 10; prompt + max_tokens <= 128; max_tokens += 2) {  // the model's context
    req["max_tokens"] = max_tokens;
    req.erase("stream");
    const json r = post("/v1/chat/completions", req);
    ASSERT_FALSE(r.is_null());
    const json& m = r["choices"][0]["message"];
    const std::string content = m["content"].is_string() ? m["content"].get<std::string>() : "";
    EXPECT_EQ(content.find('<'), std::string::npos) << max_tokens << ": " << r.dump();
    for (const json& call : m.value("tool_calls", json::array())) {
      if (call["function"]["name"] == "get_time") {
        EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false).is_object())
            << max_tokens << ": " << r.dump();
      } else {
        expect_weather_call(call["function"]["name"], call["function"]["arguments"]);
      }
      ++complete_calls;
    }
    req["stream"] = true;
    const json body = post("/v1/chat/completions", req);
    ASSERT_FALSE(body.is_null());
    for (const std::string& payload : sse_payloads(body.get<std::string>())) {
      if (payload == "[DONE]") continue;
      const json chunk = json::parse(payload);
      for (const json& c : chunk["choices"]) {
        if (c["delta"].contains("content") && c["delta"]["content"].is_string()) {
          EXPECT_EQ(c["delta"]["content"].get<std::string>().find('<'), std::string::npos) << max_tokens;
        }
      }
    }
  }
  EXPECT_GT(complete_calls, 0);  // the longer budgets fit a whole call
}

std::vector<int32_t> token_ids(const json& r) { return r["choices"][0]["token_ids"].get<std::vector<int32_t>>(); }

TEST_F(StructuredOutput, LogitBiasBansAndForcesTokens) {
  json req = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}, {"return_token_ids", true}};
  const std::vector<int32_t> plain = token_ids(post("/v1/completions", req));
  ASSERT_EQ(plain.size(), 12u);
  // Ban the greedy first token: it never appears, and the output changes.
  req["logit_bias"] = {{std::to_string(plain[0]), -100}};
  const std::vector<int32_t> banned = token_ids(post("/v1/completions", req));
  EXPECT_NE(banned, plain);
  for (int32_t t : banned) EXPECT_NE(t, plain[0]);
  // +100 on a token makes it every token.
  req["logit_bias"] = {{"400", 100}};
  for (int32_t t : token_ids(post("/v1/completions", req))) EXPECT_EQ(t, 400);
  // Out of the vocabulary or out of range: 400 naming logit_bias.
  for (const json& bad : {json{{"999999", 1}}, json{{"5", 101}}, json{{"x", 1}}, json::array()}) {
    req["logit_bias"] = bad;
    HttpReply r = http_request(server_->port(), "POST", "/v1/completions", req.dump());
    ASSERT_EQ(r.status, 400) << bad.dump() << " " << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["param"], "logit_bias") << r.body;
  }
}

TEST_F(StructuredOutput, NChoicesAreTheSeededSamplesAndShareThePrompt) {
  // Choice i of a seeded request is the request with seed + i on its own.
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day";
  json req = {{"prompt", prompt}, {"max_tokens", 10}, {"temperature", 1.0}, {"seed", 40}, {"n", 3}, {"return_token_ids", true}};
  json r = post("/v1/completions", req);
  ASSERT_FALSE(r.is_null());
  ASSERT_EQ(r["choices"].size(), 3u);
  int64_t completion = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    json one = req;
    one["n"] = 1;
    one["seed"] = 40 + i;
    json single = post("/v1/completions", one);
    EXPECT_EQ(r["choices"][i]["token_ids"], single["choices"][0]["token_ids"]) << "choice " << i;
    completion += static_cast<int64_t>(r["choices"][i]["token_ids"].size());
  }
  EXPECT_EQ(r["usage"]["completion_tokens"], completion);
  EXPECT_NE(r["choices"][0]["token_ids"], r["choices"][1]["token_ids"]);
  // The later choices find the prompt's full blocks in the prefix cache.
  EXPECT_GT(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0) << r.dump();

  // Streamed: every choice ends once, [DONE] once.
  req["stream"] = true;
  json body = post("/v1/completions", req);
  std::vector<std::string> texts(3);
  std::vector<int> finishes(3, 0);
  for (const std::string& payload : sse_payloads(body.get<std::string>())) {
    if (payload == "[DONE]") continue;
    json chunk = json::parse(payload);
    for (const json& c : chunk["choices"]) {
      const int i = c["index"];
      texts[static_cast<size_t>(i)] += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) ++finishes[static_cast<size_t>(i)];
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(finishes[static_cast<size_t>(i)], 1);
    EXPECT_EQ(texts[static_cast<size_t>(i)], r["choices"][i]["text"].get<std::string>());
  }
  req["n"] = 17;
  HttpReply bad = http_request(server_->port(), "POST", "/v1/completions", req.dump());
  ASSERT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["param"], "n");
}

}  // namespace
}  // namespace ladder::testing
