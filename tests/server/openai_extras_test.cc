// What users of vLLM and llama.cpp's server rely on beyond OpenAI's API,
// through real HTTP on stories260K: /tokenize, /detokenize, /version, an
// assistant message continued, the guided_* constraints, stop ids and stop
// text, min_tokens, special tokens shown, prompt truncation, the prompt's own
// logprobs (checked against the logprob the sampler reports for the same
// token), echo with logprobs, --chat-template and --reasoning-parser. Each
// check reads the answer with code of its own (std::regex, nlohmann, the
// server's other endpoints), never with the code under test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>

#include "stories_server_suite.h"

namespace ladder::testing {
namespace {

using nlohmann::json;

class OpenAiExtras : public StoriesServerSuite {
 protected:
  static std::vector<int32_t> tokenize(const json& body) {
    return post("/tokenize", body)["tokens"].get<std::vector<int32_t>>();
  }
  static std::string detokenize(const std::vector<int32_t>& ids) {
    return post("/detokenize", {{"tokens", ids}})["prompt"].get<std::string>();
  }
  static std::string error_param(const std::string& path, const json& body, int status = 400) {
    json e = post(path, body, status);
    return e.is_null() ? "" : e["error"]["param"].get<std::string>();
  }
};

const json kChat = json::array({{{"role", "user"}, {"content", "Tell me a story."}}});

TEST_F(OpenAiExtras, TokenizeCountsWhatTheEndpointsSendTheModel) {
  const std::string prompt = "Once upon a time";
  json vllm = post("/tokenize", {{"prompt", prompt}, {"return_token_strs", true}});
  const auto ids = vllm["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(vllm["count"], ids.size());
  EXPECT_EQ(vllm["max_model_len"], 128);
  ASSERT_EQ(vllm["token_strs"].size(), ids.size());
  json done = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}});
  EXPECT_EQ(done["usage"]["prompt_tokens"], ids.size());
  EXPECT_EQ(detokenize(ids), prompt);
  json detok = post("/detokenize", {{"tokens", ids}});
  EXPECT_EQ(detok["content"], prompt);  // llama.cpp's name

  // llama.cpp's shape: no BOS unless asked, pieces on request.
  json llama = post("/tokenize", {{"content", prompt}, {"with_pieces", true}});
  ASSERT_EQ(llama["tokens"].size() + 1, ids.size());  // the model adds BOS; llama.cpp's default does not
  std::string joined;
  for (size_t i = 0; i < llama["tokens"].size(); ++i) {
    EXPECT_EQ(llama["tokens"][i]["id"], ids[i + 1]);
    joined += llama["tokens"][i]["piece"].get<std::string>();
  }
  EXPECT_NE(joined.find("upon a time"), std::string::npos) << joined;
  EXPECT_EQ(tokenize({{"content", prompt}, {"add_special", true}}), ids);

  // The chat form renders as /v1/chat/completions does.
  const auto chat_ids = tokenize({{"messages", kChat}});
  json chat = post("/v1/chat/completions", {{"messages", kChat}, {"max_tokens", 1}});
  EXPECT_EQ(chat["usage"]["prompt_tokens"], chat_ids.size());
  const std::string rendered = detokenize(chat_ids);
  EXPECT_NE(rendered.find("Tell me a story."), std::string::npos) << rendered;

  json version = json::parse(http_request(server_->port(), "GET", "/version").body);
  EXPECT_FALSE(version["version"].get<std::string>().empty());
}

TEST_F(OpenAiExtras, ModelsNameTheArchitecture) {
  json models = call("GET", "/v1/models", nullptr);
  EXPECT_EQ(models["data"][0]["ladder"]["architecture"], "llama");  // stories260K's general.architecture
}

TEST_F(OpenAiExtras, TokenizeRefusesWhatItCannotDo) {
  EXPECT_EQ(error_param("/tokenize", json::object()), "prompt");
  EXPECT_EQ(error_param("/tokenize", {{"prompt", "x"}, {"frobnicate", 1}}), "frobnicate");
  EXPECT_EQ(error_param("/tokenize", {{"messages", kChat}, {"with_pieces", true}}), "with_pieces");
  EXPECT_EQ(error_param("/detokenize", {{"tokens", {1, 99999}}}), "tokens");
  EXPECT_EQ(error_param("/detokenize", {{"tokens", "abc"}}), "tokens");
  json missing = post("/tokenize", {{"prompt", "x"}, {"model", "no-such-model"}}, 404);
  EXPECT_EQ(missing["error"]["code"], "model_not_found");
  EXPECT_EQ(http_request(server_->port(), "GET", "/tokenize").status, 405);
  EXPECT_EQ(http_request(server_->port(), "POST", "/tokenize", "{not json").status, 400);
  // The server is still healthy.
  EXPECT_EQ(http_request(server_->port(), "GET", "/health").status, 200);
}

TEST_F(OpenAiExtras, AFinalAssistantMessageIsContinued) {
  json messages = kChat;
  messages.push_back({{"role", "assistant"}, {"content", "Once upon a"}});
  const auto continued = tokenize({{"messages", messages}, {"continue_final_message", true},
                                   {"add_generation_prompt", false}});
  const auto by_default = tokenize({{"messages", messages}});
  const auto closed = tokenize({{"messages", messages}, {"continue_final_message", false}});
  EXPECT_EQ(by_default, continued);  // llama.cpp's behaviour when nothing is said
  const std::string text = detokenize(continued);
  ASSERT_GE(text.size(), 11u);
  EXPECT_EQ(text.substr(text.size() - 11), "Once upon a") << text;
  const std::string closed_text = detokenize(closed);
  EXPECT_GT(closed.size(), continued.size());
  EXPECT_NE(closed_text.substr(closed_text.size() - 11), "Once upon a") << closed_text;

  // The completion carries on from the assistant's text, with its usage.
  json r = post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(r["usage"]["prompt_tokens"], continued.size());

  EXPECT_EQ(error_param("/v1/chat/completions", {{"messages", messages}, {"continue_final_message", true},
                                                 {"add_generation_prompt", true}}),
            "continue_final_message");
  EXPECT_EQ(error_param("/v1/chat/completions", {{"messages", kChat}, {"continue_final_message", true}}),
            "continue_final_message");
}

TEST_F(OpenAiExtras, GuidedOutputsMatchTheirConstraint) {
  const std::set<std::string> choices = {"yes", "no", "maybe"};
  const std::regex pattern("[a-c]{3}-[0-9]{2}");
  for (int seed = 0; seed < 4; ++seed) {
    json base = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"seed", seed}, {"temperature", 1.0}};
    json choice = base;
    choice["guided_choice"] = json(std::vector<std::string>(choices.begin(), choices.end()));
    json r = post("/v1/completions", choice);
    EXPECT_TRUE(choices.count(r["choices"][0]["text"].get<std::string>())) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");

    json regex = base;
    regex["guided_regex"] = "[a-c]{3}-[0-9]{2}";
    r = post("/v1/completions", regex);
    EXPECT_TRUE(std::regex_match(r["choices"][0]["text"].get<std::string>(), pattern)) << r.dump();

    json gbnf = base;
    gbnf["grammar"] = "root ::= (\"cat\" | \"dog\") \" \" [0-9]";  // llama.cpp's name
    r = post("/v1/completions", gbnf);
    EXPECT_TRUE(std::regex_match(r["choices"][0]["text"].get<std::string>(), std::regex("(cat|dog) [0-9]")))
        << r.dump();

    json schema = base;
    schema["max_tokens"] = 40;
    schema["structured_outputs"] = {{"json", {{"type", "object"},
                                              {"properties", {{"n", {{"type", "integer"}}}}},
                                              {"required", {"n"}},
                                              {"additionalProperties", false}}}};
    r = post("/v1/completions", schema);
    if (r["choices"][0]["finish_reason"] == "stop") {
      json v = json::parse(r["choices"][0]["text"].get<std::string>());
      EXPECT_TRUE(v["n"].is_number_integer()) << v.dump();
    }
  }
  json two = {{"prompt", "x"}, {"guided_regex", "a"}, {"guided_choice", {"b"}}};
  EXPECT_EQ(error_param("/v1/completions", two), "guided_choice");
  json with_format = {{"messages", kChat}, {"response_format", {{"type", "json_object"}}}, {"guided_regex", "a"}};
  EXPECT_EQ(error_param("/v1/chat/completions", with_format), "guided_regex");
  EXPECT_EQ(error_param("/v1/completions", {{"prompt", "x"}, {"guided_grammar", "root ::= undefined-rule"}}), "guided_grammar");
  EXPECT_EQ(error_param("/v1/completions", {{"prompt", "x"}, {"guided_regex", "(a"}}), "guided_regex");
  EXPECT_EQ(error_param("/v1/completions", {{"prompt", "x"}, {"guided_regex", "a"}, {"min_tokens", 2}}),
            "min_tokens");
}

// A grammar too ambiguous to enforce (its parse outgrows the matcher's
// budget within a few tokens) fails its own request with a 400 that says why,
// streamed or not, and leaves the server healthy with every KV block free.
TEST_F(OpenAiExtras, AnAmbiguousGrammarFailsItsRequestNotTheServer) {
  std::string gbnf = "root ::= r0\n";
  for (int i = 0; i < 8; ++i) {
    const std::string a = "r" + std::to_string(i), b = "r" + std::to_string((i + 1) % 8);
    gbnf += a + " ::= " + a + " " + b + " | " + b + " " + a + " | [a-z ]\n";
  }
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 120}, {"temperature", 0}, {"grammar", gbnf}};
  json e = post("/v1/completions", body, 400);
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e["error"]["code"], "grammar_too_complex") << e.dump();
  EXPECT_NE(e["error"]["message"].get<std::string>().find("ambiguous"), std::string::npos) << e.dump();
  body["stream"] = true;
  json s = post("/v1/completions", body);
  ASSERT_TRUE(s.is_string());
  const std::string text = s.get<std::string>();
  EXPECT_NE(text.find("\"code\":\"grammar_too_complex\""), std::string::npos) << text;
  EXPECT_NE(text.find("data: [DONE]"), std::string::npos) << text;
  json health = call("GET", "/health", nullptr);
  EXPECT_EQ(health["kv_blocks_used"], 0) << health.dump();
  EXPECT_EQ(health["running"], 0) << health.dump();
  // The same alphabet without the ambiguity runs to its length.
  json ok = post("/v1/completions",
                 {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"grammar", "root ::= [a-z ]+"}});
  EXPECT_EQ(ok["choices"][0]["finish_reason"], "length") << ok.dump();
}

TEST_F(OpenAiExtras, StopIdsStopTextAndMinTokens) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0},
                     {"return_token_ids", true}};
  json plain = post("/v1/completions", base);
  const auto out = plain["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(out.size(), 6u);
  const std::string text = plain["choices"][0]["text"];
  const int32_t third = out[2];

  // A stop id ends the output there; its text is left out unless asked for.
  json stop = base;
  stop["stop_token_ids"] = {third};
  json r = post("/v1/completions", stop);
  auto ids = r["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  const auto first_at = std::find(out.begin(), out.end(), third) - out.begin();
  ASSERT_EQ(ids.size(), static_cast<size_t>(first_at + 1));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  // The text of the first k tokens, as a request cut at max_tokens k has it.
  auto text_of_first = [&](int64_t k) -> std::string {
    if (k == 0) return "";
    json cut = base;
    cut["max_tokens"] = k;
    return post("/v1/completions", cut)["choices"][0]["text"];
  };
  EXPECT_EQ(r["choices"][0]["text"], text_of_first(first_at));
  stop["include_stop_str_in_output"] = true;
  r = post("/v1/completions", stop);
  EXPECT_EQ(r["choices"][0]["text"], text_of_first(first_at + 1));

  // A stop string: cut before it, or kept with include_stop_str_in_output.
  const std::string s = text.substr(4, 3);
  const size_t at = text.find(s);
  json by_string = base;
  by_string["stop"] = {s};
  EXPECT_EQ(post("/v1/completions", by_string)["choices"][0]["text"], text.substr(0, at));
  by_string["include_stop_str_in_output"] = true;
  EXPECT_EQ(post("/v1/completions", by_string)["choices"][0]["text"], text.substr(0, at + s.size()));

  // min_tokens: the stop id cannot come before that many tokens.
  json min = base;
  min["stop_token_ids"] = {out[0]};
  min["min_tokens"] = 4;
  r = post("/v1/completions", min);
  ids = r["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(ids.size(), 4u) << r.dump();
  for (size_t i = 0; i < 4; ++i) EXPECT_NE(ids[i], out[0]);
  min["max_tokens"] = 3;
  EXPECT_EQ(error_param("/v1/completions", min), "min_tokens");
}

TEST_F(OpenAiExtras, SpecialTokensShownAndPromptTruncated) {
  const std::vector<int32_t> with_bos = tokenize({{"prompt", "a"}});
  const std::vector<int32_t> without = tokenize({{"prompt", "a"}, {"add_special_tokens", false}});
  ASSERT_EQ(with_bos.size(), without.size() + 1);
  const int32_t bos = with_bos[0];
  json forced = {{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"logit_bias", {{std::to_string(bos), 100}}},
                 {"return_token_ids", true}};
  json hidden = post("/v1/completions", forced);
  EXPECT_EQ(hidden["choices"][0]["token_ids"], json({bos, bos, bos}));
  EXPECT_EQ(hidden["choices"][0]["text"], "");
  forced["skip_special_tokens"] = false;
  json shown = post("/v1/completions", forced);
  const std::string bos_text = post("/tokenize", {{"prompt", "a"}, {"return_token_strs", true}})["token_strs"][0];
  EXPECT_EQ(shown["choices"][0]["text"], bos_text + bos_text + bos_text);

  json cut = post("/v1/completions", {{"prompt", "Once upon a time there was"}, {"max_tokens", 1},
                                      {"truncate_prompt_tokens", 5}});
  EXPECT_EQ(cut["usage"]["prompt_tokens"], 5);
}

TEST_F(OpenAiExtras, PromptLogprobsAreTheModelsOwn) {
  // Greedy: the next token and the logprob the sampler gave it.
  const std::vector<int32_t> prompt = tokenize({{"prompt", "Once upon a time"}});
  json gen = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 0},
                                      {"return_token_ids", true}});
  const int32_t next = gen["choices"][0]["token_ids"][0];
  const double sampled_logprob = gen["choices"][0]["logprobs"]["token_logprobs"][0];

  std::vector<int32_t> extended = prompt;
  extended.push_back(next);
  json r = post("/v1/completions", {{"prompt", extended}, {"max_tokens", 1}, {"prompt_logprobs", 2}});
  const json& pl = r["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), extended.size());
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < extended.size(); ++i) {
    const std::string id = std::to_string(extended[i]);
    ASSERT_TRUE(pl[i].contains(id)) << pl[i].dump();
    EXPECT_LE(pl[i][id]["logprob"].get<double>(), 0.0);
    EXPECT_GE(pl[i][id]["rank"].get<int>(), 1);
    int ranked = 0;
    for (const auto& [k, v] : pl[i].items()) ranked += v["rank"].get<int>() <= 2 ? 1 : 0;
    EXPECT_EQ(ranked, 2) << pl[i].dump();
  }
  const json& last = pl[extended.size() - 1][std::to_string(next)];
  EXPECT_EQ(last["rank"], 1);  // greedy picked the most likely
  EXPECT_NEAR(last["logprob"].get<double>(), sampled_logprob, 2e-3);

  // Chat: one list for the response; streaming has nowhere to put it.
  json chat = post("/v1/chat/completions", {{"messages", kChat}, {"max_tokens", 1}, {"prompt_logprobs", 0}});
  EXPECT_EQ(chat["prompt_logprobs"].size(), chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(error_param("/v1/completions", {{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", true}}),
            "prompt_logprobs");
}

TEST_F(OpenAiExtras, EchoWithLogprobsLeadsWithThePrompt) {
  const std::string prompt = "Once upon a time";
  const auto ids = tokenize({{"prompt", prompt}});
  json r = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 3}, {"echo", true}, {"logprobs", 1},
                                    {"temperature", 0}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size() + r["usage"]["completion_tokens"].get<size_t>());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < lp["token_logprobs"].size(); ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
  }
  EXPECT_EQ(r["choices"][0]["text"].get<std::string>().rfind(prompt, 0), 0u);
  // n_probs (llama.cpp) asks for the same alternatives.
  json n = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}, {"n_probs", 3}});
  EXPECT_EQ(n["choices"][0]["logprobs"]["top_logprobs"][0].size(), 3u);
}

// --chat-template (a file, or the text) replaces the model's; a bad one stops
// the server at start with a message naming it.
TEST(ServeChatTemplate, AFileOrTextReplacesTheModelsTemplate) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/plain.jinja";
  std::ofstream(path) << "{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}"
                         "{% if add_generation_prompt %}[assistant]{% endif %}";
  for (const std::string& chosen : {path, std::string("{% for m in messages %}[{{ m.role }}]{{ m.content }}\n"
                                                      "{% endfor %}{% if add_generation_prompt %}[assistant]"
                                                      "{% endif %}")}) {
    ServerProcess server({"-m", shared_path("models/stories260K.gguf"), "--chat-template", chosen});
    ASSERT_TRUE(server.ok());
    HttpReply r = http_request(server.port(), "POST", "/tokenize",
                               json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    HttpReply d = http_request(server.port(), "POST", "/detokenize",
                               json{{"tokens", json::parse(r.body)["tokens"]}}.dump());
    EXPECT_EQ(json::parse(d.body)["prompt"], "[user]Hi\n[assistant]");
  }
  CommandResult bad = run_command({ladder_bin(), "serve", "--port", "0", "-m", shared_path("models/stories260K.gguf"),
                                   "--chat-template", dir + "/missing.jinja"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("missing.jinja"), std::string::npos) << bad.err;
}

// --reasoning-parser: with a template whose generation prompt opens the
// thinking, deepseek_r1 puts the output into reasoning_content; none leaves it
// in content.
TEST(ServeReasoningParser, SplitsOrLeavesTheOutput) {
  const std::string tmpl = "{% for m in messages %}{{ m.content }}\n{% endfor %}<think>\n";
  std::string reasoning, content;
  for (const std::string parser : {"deepseek_r1", "none"}) {
    ServerProcess server(
        {"-m", shared_path("models/stories260K.gguf"), "--chat-template", tmpl, "--reasoning-parser", parser});
    ASSERT_TRUE(server.ok());
    HttpReply r = http_request(server.port(), "POST", "/v1/chat/completions",
                               json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                    {"max_tokens", 8},
                                    {"temperature", 0}}
                                   .dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json m = json::parse(r.body)["choices"][0]["message"];
    if (parser == "none") {
      EXPECT_FALSE(m.contains("reasoning_content")) << m.dump();
      EXPECT_EQ(m["content"], reasoning);  // the same greedy text, all of it content
    } else {
      reasoning = m.value("reasoning_content", "");
      EXPECT_FALSE(reasoning.empty()) << m.dump();
      EXPECT_EQ(m["content"], "");
    }
  }
}

}  // namespace
}  // namespace ladder::testing
