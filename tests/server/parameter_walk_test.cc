// Every request parameter of OpenAI's chat and completions APIs, one at a
// time with a typical value: the server either honours it (200; the tests of
// each feature check what it does) or refuses it with a 400 naming it. None
// is silently ignored: a parameter not in these lists is refused too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stories_server_suite.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

struct Param {
  std::string name;
  json value;
  bool honoured;  // false: refused with a 400 naming it
};

// Chat Completions request body (OpenAI API reference), every field but
// model and messages.
std::vector<Param> chat_params() {
  return {
      {"audio", {{"voice", "alloy"}, {"format", "wav"}}, false},
      {"frequency_penalty", 0.5, true},
      {"function_call", "auto", false},
      {"functions", json::array({{{"name", "f"}}}), false},
      {"logit_bias", {{"400", 5}}, true},
      {"logprobs", true, true},
      {"max_completion_tokens", 8, true},
      {"max_tokens", 8, true},
      {"metadata", {{"k", "v"}}, false},
      {"modalities", json::array({"text"}), true},
      {"n", 2, true},
      {"parallel_tool_calls", true, true},
      {"prediction", {{"type", "content"}, {"content", "x"}}, false},
      {"presence_penalty", 0.5, true},
      {"prompt_cache_key", "k", true},
      {"reasoning_effort", "low", false},
      {"response_format", {{"type", "json_object"}}, true},
      {"safety_identifier", "u1", true},
      {"seed", 3, true},
      {"service_tier", "auto", true},
      {"stop", json::array({"\n"}), true},
      {"store", false, true},
      {"stream", true, true},
      {"temperature", 0.5, true},
      {"tool_choice", "none", true},   // no tools, and none called
      {"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}}), true},
      {"top_logprobs", 2, false},  // needs logprobs: refused alone, naming top_logprobs
      {"top_p", 0.9, true},
      {"user", "u1", true},
      {"verbosity", "low", false},
      {"web_search_options", json::object(), false},
  };
}

// Completions request body, every field but model and prompt.
std::vector<Param> completion_params() {
  return {
      {"best_of", 2, false},
      {"echo", true, true},
      {"frequency_penalty", 0.5, true},
      {"logit_bias", {{"400", 5}}, true},
      {"logprobs", 2, true},
      {"max_tokens", 8, true},
      {"n", 2, true},
      {"presence_penalty", 0.5, true},
      {"seed", 3, true},
      {"stop", "\n", true},
      {"stream", true, true},
      {"stream_options", {{"include_usage", true}}, false},  // needs stream: refused alone, naming it
      {"suffix", "end", false},
      {"temperature", 0.5, true},
      {"top_p", 0.9, true},
      {"user", "u1", true},
  };
}

// vLLM's and llama.cpp server's extensions, on both endpoints: each honoured
// (its own test checks what it does) or accepted where it asks for what
// Ladder always does (cache_prompt, spaces_between_special_tokens).
std::vector<Param> extension_params() {
  return {
      {"cache_prompt", true, true},
      {"grammar", "root ::= [a-z]+", true},
      {"guided_choice", json::array({"yes", "no"}), true},
      {"guided_grammar", "root ::= [a-z]+", true},
      {"guided_json", {{"type", "object"}}, true},
      {"guided_regex", "[a-z]+ [a-z]+", true},
      {"ignore_eos", true, true},
      {"include_stop_str_in_output", true, true},
      {"json_schema", {{"type", "string"}}, true},
      {"min_tokens", 2, true},
      {"n_probs", 2, true},
      {"priority", -1, true},
      {"prompt_logprobs", 1, true},
      {"return_token_ids", true, true},
      {"skip_special_tokens", false, true},
      {"spaces_between_special_tokens", true, true},
      {"stop_token_ids", json::array({13}), true},
      {"structured_outputs", {{"choice", json::array({"yes", "no"})}}, true},
      {"truncate_prompt_tokens", 8, true},
      {"typical_p", 0.9, true},
      {"guided_decoding_backend", "xgrammar", false},
      {"min_tokens", -1, false},
      {"typical_p", 0.0, false},
      {"guided_regex", "(?=x)", false},
  };
}

// The walk asks whether `tools` is accepted; the suite's server has the tools
// preamble off (stories_server_suite.h).
class ParameterWalk : public StoriesServerSuite {
 protected:
  static void walk(const std::string& path, const json& base, const std::vector<Param>& params) {
    for (const Param& p : params) {
      json body = base;
      body[p.name] = p.value;
      if (!body.contains("max_tokens") && !body.contains("max_completion_tokens")) body["max_tokens"] = 4;
      HttpReply r = http_request(server_->port(), "POST", path, body.dump());
      if (p.honoured) {
        EXPECT_EQ(r.status, 200) << path << " " << p.name << " -> " << r.body;
      } else {
        ASSERT_EQ(r.status, 400) << path << " " << p.name << " -> " << r.body;
        json e = json::parse(r.body);
        EXPECT_EQ(e["error"]["param"], p.name) << r.body;
        EXPECT_FALSE(e["error"]["message"].get<std::string>().empty());
      }
    }
    // Anything else is refused by name too.
    json body = base;
    body["frobnicate"] = 1;
    HttpReply r = http_request(server_->port(), "POST", path, body.dump());
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["param"], "frobnicate");
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "unsupported_parameter");
  }
};

TEST_F(ParameterWalk, ChatCompletions) {
  walk("/v1/chat/completions", {{"model", "stories260K"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}},
       chat_params());
}

TEST_F(ParameterWalk, Completions) {
  walk("/v1/completions", {{"model", "stories260K"}, {"prompt", "Once upon a time"}}, completion_params());
}

TEST_F(ParameterWalk, VllmAndLlamaCppExtensions) {
  walk("/v1/completions", {{"model", "stories260K"}, {"prompt", "Once upon a time"}}, extension_params());
  std::vector<Param> chat = extension_params();
  chat.push_back({"continue_final_message", false, true});
  chat.push_back({"add_generation_prompt", true, true});
  chat.push_back({"chat_template_kwargs", {{"enable_thinking", false}}, true});
  walk("/v1/chat/completions", {{"model", "stories260K"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}},
       chat);
}

TEST_F(ParameterWalk, Embeddings) {
  const json base = {{"model", "stories260K"}, {"input", "Once upon a time"}};
  for (const Param& p : std::vector<Param>{{"encoding_format", "float", true},
                                           {"encoding_format", "base64", true},
                                           {"user", "u1", true},
                                           {"dimensions", 7, false}}) {
    json body = base;
    body[p.name] = p.value;
    HttpReply r = http_request(server_->port(), "POST", "/v1/embeddings", body.dump());
    if (p.honoured) {
      EXPECT_EQ(r.status, 200) << p.name << " -> " << r.body;
    } else {
      ASSERT_EQ(r.status, 400) << r.body;
      EXPECT_EQ(json::parse(r.body)["error"]["param"], p.name);
    }
  }
}

}  // namespace
}  // namespace ladder::testing
