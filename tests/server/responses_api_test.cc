// The Responses API (POST /v1/responses) through real HTTP on stories260K:
// the response object and its streamed events against the chat completion
// the same conversation gets, conversations continued with
// previous_response_id (their prompt counted through /tokenize), stored
// responses read and deleted, function calls and structured output, and the
// refusals. The store's bound and tenant isolation are unit-tested.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "server/responses_request.h"
#include "stories_server_suite.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

class ResponsesApi : public StoriesServerSuite {
 protected:
  static size_t prompt_tokens(const json& messages) {
    return call("POST", "/tokenize", {{"messages", messages}})["count"].get<size_t>();
  }
  // The answer text of a response object's message items.
  static std::string output_text(const json& response) {
    std::string text;
    for (const json& item : response["output"]) {
      if (item["type"] != "message") continue;
      for (const json& part : item["content"]) text += part["text"].get<std::string>();
    }
    return text;
  }
};

TEST_F(ResponsesApi, AResponseIsTheChatCompletionOfItsConversation) {
  const json messages = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}};
  json chat = call("POST", "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 12}, {"temperature", 0}});
  json r = call("POST", "/v1/responses",
                {{"input", "Hi"}, {"instructions", "Be brief."}, {"max_output_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(output_text(r), chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(r["usage"]["input_tokens"], prompt_tokens(messages));
  EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(r["instructions"], "Be brief.");
  EXPECT_EQ(r["max_output_tokens"], 12);
  if (chat["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  } else {
    EXPECT_EQ(r["status"], "completed");
  }
}

TEST_F(ResponsesApi, StreamedEventsAddUpToTheResponse) {
  const json req = {{"input", "Once upon a time"}, {"max_output_tokens", 16}, {"temperature", 0}};
  json whole = call("POST", "/v1/responses", req);
  json streamed = req;
  streamed["stream"] = true;
  HttpReply r = http_request(server_->port(), "POST", "/v1/responses", streamed.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<json> events;
  for (size_t at = 0; (at = r.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = r.body.find("\n\n", at);
    ASSERT_NE(end, std::string::npos);
    events.push_back(json::parse(r.body.substr(at + 6, end - at - 6)));
    // Each event's name line says its type.
    const size_t line = r.body.rfind("event: ", at);
    ASSERT_NE(line, std::string::npos);
    EXPECT_EQ(r.body.substr(line + 7, at - line - 8), events.back()["type"].get<std::string>());
    at = end;
  }
  ASSERT_GE(events.size(), 8u);
  EXPECT_EQ(events[0]["type"], "response.created");
  EXPECT_EQ(events[1]["type"], "response.in_progress");
  std::string deltas;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    if (events[i]["type"] == "response.output_text.delta") deltas += events[i]["delta"].get<std::string>();
  }
  const json& last = events.back();
  EXPECT_TRUE(last["type"] == "response.completed" || last["type"] == "response.incomplete") << last.dump();
  EXPECT_EQ(deltas, output_text(whole));
  EXPECT_EQ(output_text(last["response"]), deltas);
  EXPECT_EQ(last["response"]["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
  EXPECT_EQ(last["response"]["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);  // the Responses API ends on its terminal event
}

TEST_F(ResponsesApi, PreviousResponseIdContinuesTheConversation) {
  json first = call("POST", "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 6}, {"temperature", 0}});
  const std::string answer = output_text(first);
  json second = call("POST", "/v1/responses", {{"input", "And then?"},
                                               {"previous_response_id", first["id"]},
                                               {"max_output_tokens", 4}});
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  const json conversation = {{{"role", "user"}, {"content", "Hi"}},
                             {{"role", "assistant"}, {"content", answer}},
                             {{"role", "user"}, {"content", "And then?"}}};
  EXPECT_EQ(second["usage"]["input_tokens"], prompt_tokens(conversation));

  // Stored responses can be read back and deleted; store false keeps none.
  json got = call("GET", "/v1/responses/" + first["id"].get<std::string>(), nullptr);
  EXPECT_EQ(got["id"], first["id"]);
  EXPECT_EQ(output_text(got), answer);
  call("DELETE", "/v1/responses/" + first["id"].get<std::string>(), nullptr);
  call("GET", "/v1/responses/" + first["id"].get<std::string>(), nullptr, 404);
  json missing = call("POST", "/v1/responses", {{"input", "x"}, {"previous_response_id", first["id"]}}, 404);
  EXPECT_EQ(missing["error"]["param"], "previous_response_id");
  json unstored = call("POST", "/v1/responses", {{"input", "x"}, {"max_output_tokens", 2}, {"store", false}});
  call("GET", "/v1/responses/" + unstored["id"].get<std::string>(), nullptr, 404);
}

TEST_F(ResponsesApi, FunctionCallsAndStructuredOutput) {
  const json tools = json::parse(R"([{"type": "function", "name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}}])");
  // The model spells the call's tags a byte at a time: the output may use
  // the whole 128-token context (no max_output_tokens).
  json r = call("POST", "/v1/responses", {{"input", "Weather?"}, {"tools", tools},
                                          {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                                          {"parallel_tool_calls", false}, {"temperature", 0}});
  json fc;
  for (const json& item : r["output"]) {
    if (item["type"] == "function_call") fc = item;
  }
  ASSERT_TRUE(fc.is_object()) << r.dump();
  EXPECT_EQ(fc["name"], "get_weather");
  EXPECT_TRUE(json::parse(fc["arguments"].get<std::string>())["city"].is_string());
  // A call and its output, as input items, are the chat messages a tool
  // turn is (this model's context is too small to continue the call above).
  const json items = json::parse(R"([{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "ok"}])");
  json next = call("POST", "/v1/responses", {{"input", items}, {"max_output_tokens", 2}});
  const json as_chat = json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
      "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "ok"}])");
  EXPECT_EQ(next["usage"]["input_tokens"], prompt_tokens(as_chat));

  json schema = call("POST", "/v1/responses",
                     {{"input", "A number?"},
                      {"max_output_tokens", 30},
                      {"text", {{"format", {{"type", "json_schema"},
                                            {"name", "n"},
                                            {"schema", {{"type", "object"},
                                                        {"properties", {{"n", {{"type", "integer"}}}}},
                                                        {"required", {"n"}},
                                                        {"additionalProperties", false}}}}}}}});
  if (schema["status"] == "completed") {
    EXPECT_TRUE(json::parse(output_text(schema))["n"].is_number_integer()) << schema.dump();
  }
}

TEST_F(ResponsesApi, RefusalsNameTheParameter) {
  auto param_of = [&](const json& body) { return call("POST", "/v1/responses", body, 400)["error"]["param"]; };
  EXPECT_EQ(param_of({{"instructions", "x"}}), "input");
  EXPECT_EQ(param_of({{"input", "x"}, {"frobnicate", 1}}), "frobnicate");
  EXPECT_EQ(param_of({{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}), "tools");
  EXPECT_EQ(param_of({{"input", "x"}, {"include", {"message.output_text.logprobs"}}}), "include");
  EXPECT_EQ(param_of({{"input", "x"}, {"reasoning", {{"effort", "high"}}}}), "reasoning");
  EXPECT_EQ(param_of({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}}}}}}}}), "input[0].content");
  EXPECT_EQ(http_request(server_->port(), "PUT", "/v1/responses", "{}").status, 405);
  EXPECT_EQ(http_request(server_->port(), "GET", "/health").status, 200);
}

TEST(ResponseStore, BoundedAndPerTenant) {
  server::ResponseStore store(2, 1 << 20);
  for (const char* id : {"a", "b"}) store.put(id, {0, nlohmann::ordered_json::array(), {{"id", id}}});
  EXPECT_FALSE(store.get("a", 1));  // another tenant's
  EXPECT_FALSE(store.erase("a", 1));
  ASSERT_TRUE(store.get("a", 0));  // now the most recently used
  store.put("c", {0, nlohmann::ordered_json::array(), {{"id", "c"}}});
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.get("b", 0));  // the least recently used went
  EXPECT_TRUE(store.get("a", 0));
  EXPECT_TRUE(store.erase("c", 0));
  EXPECT_EQ(store.size(), 1u);
  // The byte bound: a large entry pushes out the older ones; one larger
  // than the whole store is not kept.
  server::ResponseStore small(100, 400);
  const std::string text(150, 'x');
  small.put("p", {0, nlohmann::ordered_json::array({text}), {{"id", "p"}}});
  small.put("q", {0, nlohmann::ordered_json::array({text}), {{"id", "q"}}});
  EXPECT_TRUE(small.get("q", 0));
  small.put("r", {0, nlohmann::ordered_json::array({text}), {{"id", "r"}}});
  EXPECT_FALSE(small.get("p", 0));
  EXPECT_LE(small.bytes(), 400u);
  small.put("huge", {0, nlohmann::ordered_json::array({std::string(500, 'y')}), {}});
  EXPECT_FALSE(small.get("huge", 0));
}

}  // namespace
}  // namespace ladder::testing
