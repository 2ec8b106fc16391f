// ChatTemplate's API: the ChatML fallback, context variables, bad input,
// GGUF loading, robustness to mutated templates, the `chat-template`
// command, and ChatRenderInput::from_openai (expected JSON written by hand
// from the OpenAI API's shapes).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer_test_util.h"

namespace ladder::tokenizer {
namespace {

using ojson = nlohmann::ordered_json;
using testing::kFixedNow;

Result<std::string> render_bytes(const ChatTemplate& t, const ChatRenderInput& in) {
  LADDER_ASSIGN_OR_RETURN(jinja::Text out, t.render(in));
  return out.bytes();
}

TEST(ChatTemplateApi, ChatMlFallback) {
  ChatTemplate t = ChatTemplate::chatml();
  ChatRenderInput in;
  in.messages = ojson::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  Result<std::string> out = render_bytes(t, in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  in.add_generation_prompt = false;
  out = render_bytes(t, in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(*out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateApi, ContextVariables) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{{ bos_token }}|{{ tools is defined }}|{{ add_generation_prompt }}|{{ enable_thinking }}|"
      "{{ messages[0].content }}|{{ strftime_now('%Y') }}|{{ eos_token }}");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatRenderInput in;
  in.messages = ojson::parse(R"([{"role": "user", "content": "q"}])");
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.kwargs = ojson::parse(R"({"enable_thinking": false})");
  in.now = kFixedNow;
  Result<std::string> out = render_bytes(*t, in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<s>|False|True|False|q|2026|</s>");
  in.tools = ojson::array();
  out = render_bytes(*t, in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->substr(0, 9), "<s>|True|");
}

TEST(ChatTemplateApi, BadInputIsAStatus) {
  Result<ChatTemplate> t = ChatTemplate::parse("{{ messages }}");
  ASSERT_TRUE(t.is_ok());
  ChatRenderInput in;
  in.messages = ojson::object();
  EXPECT_FALSE(render_bytes(*t, in).is_ok());
  // Deeply nested user JSON is refused before anything recurses over it.
  ojson deep = "leaf";
  for (int i = 0; i < 1000; ++i) deep = ojson::array({deep});
  in.messages = ojson::array({ojson{{"role", "user"}, {"content", deep}}});
  Result<std::string> out = render_bytes(*t, in);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("nests deeper"), std::string::npos) << out.status().to_string();
}

TEST(ChatTemplateApi, FromGguf) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.chat_template", "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}");
  std::vector<uint8_t> bytes = w.to_bytes();
  Result<gguf::GgufFile> file = gguf::GgufFile::parse(bytes);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  Result<ChatTemplate> t = chat_template_from_gguf(*file);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatRenderInput in;
  in.messages = ojson::parse(R"([{"role": "user", "content": "x"}])");
  Result<std::string> out = render_bytes(*t, in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(*out, "[user]x");

  gguf::GgufWriter bare;
  bare.set_string("general.architecture", "llama");
  std::vector<uint8_t> bare_bytes = bare.to_bytes();
  Result<gguf::GgufFile> bare_file = gguf::GgufFile::parse(bare_bytes);
  ASSERT_TRUE(bare_file.is_ok());
  Result<ChatTemplate> fallback = chat_template_from_gguf(*bare_file);
  ASSERT_TRUE(fallback.is_ok());
  EXPECT_EQ(fallback->source(), ChatTemplate::chatml().source());

  gguf::GgufWriter broken;
  broken.set_string("tokenizer.chat_template", "{% if %}");
  std::vector<uint8_t> broken_bytes = broken.to_bytes();
  Result<gguf::GgufFile> broken_file = gguf::GgufFile::parse(broken_bytes);
  ASSERT_TRUE(broken_file.is_ok());
  Result<ChatTemplate> bad = chat_template_from_gguf(*broken_file);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("tokenizer.chat_template"), std::string::npos);
}

// Random byte edits of real templates: parsing and rendering must return a
// result or a Status, never crash or hang.
TEST(Robustness, MutatedTemplatesNeverCrash) {
  std::string readme = ladder::testing::shared_path("chat-templates/README.md");
  ASSERT_FALSE(readme.empty());
  std::string dir = readme.substr(0, readme.rfind('/'));
  const char* names[] = {"Qwen3.5-4B.jinja", "google-gemma-4-31B-it.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                         "MiniMax-M2.jinja"};
  const char kAlphabet[] = "{}%#-+|()[]'\".,:= \nabcxyz0123456789~*/";
  std::mt19937 rng(12345);
  ChatRenderInput in;
  in.messages = ojson::parse(R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
      {"role": "assistant", "content": "a", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"k": 1}}}]},
      {"role": "tool", "content": "r"}])");
  int parsed = 0, rendered = 0;
  for (const char* name : names) {
    std::string src = ladder::testing::read_file(dir + "/" + name);
    for (int iter = 0; iter < 300; ++iter) {
      std::string m = src;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits && !m.empty(); ++k) {
        size_t at = rng() % m.size();
        switch (rng() % 3) {
          case 0: m.erase(at, 1 + rng() % 8); break;
          case 1: m.insert(at, 1, kAlphabet[rng() % (sizeof(kAlphabet) - 1)]); break;
          default: m[at] = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
        }
      }
      Result<ChatTemplate> t = ChatTemplate::parse(m);
      if (!t.is_ok()) continue;
      ++parsed;
      rendered += render_bytes(*t, in).is_ok();
    }
  }
  EXPECT_GT(parsed, 0);
  std::printf("mutated templates: %d parsed, %d rendered\n", parsed, rendered);
}

TEST(Cli, ChatTemplateCommand) {
  std::string dir = ladder::testing::temp_dir();
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.chat_template",
               "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
               "{% if tools is defined %}T{{ tools | length }}{% endif %}{% if add_generation_prompt %}<assistant>{% endif %}");
  gguf::Value tokens = gguf::Value::make_array(
      gguf::ValueType::kString, {gguf::Value::make_string("<unk>"), gguf::Value::make_string("<s>"), gguf::Value::make_string("</s>")});
  w.set("tokenizer.ggml.tokens", tokens);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  ASSERT_TRUE(w.write(dir + "/m.gguf").is_ok());
  const std::string msgs = R"([{"role":"user","content":"hi"}])";
  ladder::testing::CommandResult r = ladder::testing::run_command({ladder::testing::ladder_bin(), "chat-template", "-m", dir + "/m.gguf", "--messages", msgs});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s><user>hi<assistant>");
  r = ladder::testing::run_command({ladder::testing::ladder_bin(), "chat-template", "-m", dir + "/m.gguf", "--messages", msgs,
                            "--no-generation-prompt", "--tools", R"([{"type":"function"}])"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s><user>hiT1");
  std::string tpl = dir + "/t.jinja";
  FILE* f = std::fopen(tpl.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{{ eos_token }}{{ messages | length }}", f);
  std::fclose(f);
  r = ladder::testing::run_command({ladder::testing::ladder_bin(), "chat-template", "-m", dir + "/m.gguf", "--messages", msgs, "--template", tpl});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "</s>1");
  r = ladder::testing::run_command({ladder::testing::ladder_bin(), "chat-template", "-m", dir + "/m.gguf", "--messages", "[not json"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--messages is not valid JSON"), std::string::npos) << r.err;
  r = ladder::testing::run_command({ladder::testing::ladder_bin(), "chat-template", "-m", dir + "/m.gguf", "--messages", msgs, "--template", tpl + ".missing"});
  EXPECT_NE(r.exit_code, 0);
}


Result<ChatRenderInput> from_openai(const std::string& messages, const std::string& tools = "") {
  ojson m = ojson::parse(messages);
  if (tools.empty()) return ChatRenderInput::from_openai(m);
  ojson t = ojson::parse(tools);
  return ChatRenderInput::from_openai(m, &t);
}

constexpr const char* kToolCalls = R"([
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": [true, null]}"}},
      {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
      {"id": "c", "type": "function", "function": {"name": "h", "arguments": "not json"}},
      {"id": "d", "type": "function", "function": {"name": "k", "arguments": "[1, 2]"}},
      {"id": "e", "type": "function", "function": {"name": "m", "arguments": {"already": "object", "n": [1.5]}}},
      {"id": "f", "type": "function", "function": {"name": "n"}}]},
    {"role": "tool", "tool_call_id": "a", "name": "f", "content": "ok"}])";

TEST(ChatRenderInput, FromOpenAiKeepsTheRequestAsItIs) {
  Result<ChatRenderInput> in =
      from_openai(kToolCalls, R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])");
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_EQ(in->messages, ojson::parse(kToolCalls));
  ASSERT_TRUE(in->tools.has_value());
  EXPECT_EQ(in->tools->dump(), R"([{"type":"function","function":{"name":"f","parameters":{}}}])");
}

// Whether a template prints `tools` is found by rendering: the ChatML
// fallback and Gemma 2's template ignore them (the server adds a preamble),
// Qwen 2.5's and Hermes' print them.
TEST(ChatTemplateContext, TemplatesThatRenderToolsAreTold) {
  EXPECT_FALSE(ChatTemplate::chatml().renders_tools());
  auto load = [](const std::string& name) {
    Result<ChatTemplate> t =
        ChatTemplate::parse(ladder::testing::read_file(ladder::testing::shared_path("chat-templates/" + name)));
    EXPECT_TRUE(t.is_ok()) << name << ": " << t.status().to_string();
    return t.is_ok() && t->renders_tools();
  };
  EXPECT_FALSE(load("google-gemma-2-2b-it.jinja"));
  EXPECT_TRUE(load("Qwen-Qwen2.5-7B-Instruct.jinja"));
  EXPECT_TRUE(load("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"));
}

TEST(ChatTemplateContext, ToolCallArgumentsAsObjectsForHuggingFaceTemplates) {
  ChatTemplate chatml = ChatTemplate::chatml();  // prints function | tojson
  EXPECT_FALSE(chatml.wants_argument_strings());
  Result<ChatRenderInput> in = from_openai(kToolCalls);
  ASSERT_TRUE(in.is_ok());
  Result<ojson> context = chatml.context(*in);
  ASSERT_TRUE(context.is_ok());
  const ojson& calls = (*context)["messages"][1]["tool_calls"];
  // Key order of the decoded object is the string's, as Python's json.loads keeps it.
  EXPECT_EQ(calls[0]["function"]["arguments"].dump(), R"({"z":1,"a":[true,null]})");
  EXPECT_EQ(calls[1]["function"]["arguments"], ojson::object());
  EXPECT_EQ(calls[2]["function"]["arguments"], "not json");
  EXPECT_EQ(calls[3]["function"]["arguments"], "[1, 2]");
  EXPECT_EQ(calls[4]["function"]["arguments"].dump(), R"({"already":"object","n":[1.5]})");
  EXPECT_EQ(calls[5]["function"]["arguments"], ojson::object());
  EXPECT_EQ((*context)["messages"][1]["content"], nullptr);
  EXPECT_EQ((*context)["messages"][2].dump(), R"({"role":"tool","tool_call_id":"a","name":"f","content":"ok"})");
}

TEST(ChatTemplateContext, ToolCallArgumentsAsStringsForTemplatesThatConcatenateThem) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{% for m in messages %}{% for c in m.tool_calls | default([]) %}"
      "{{ c.function.name + ':' + c.function.arguments + ';' }}{% endfor %}{% endfor %}");
  ASSERT_TRUE(t.is_ok());
  EXPECT_TRUE(t->wants_argument_strings());
  Result<ChatRenderInput> in = from_openai(kToolCalls);
  ASSERT_TRUE(in.is_ok());
  Result<ojson> context = t->context(*in);
  ASSERT_TRUE(context.is_ok());
  const ojson& calls = (*context)["messages"][1]["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"z": 1, "a": [true, null]})");  // as the client sent it
  EXPECT_EQ(calls[1]["function"]["arguments"], "{}");
  // An object is printed as Python's json.dumps prints it.
  EXPECT_EQ(calls[4]["function"]["arguments"], R"({"already": "object", "n": [1.5]})");
  EXPECT_EQ(calls[5]["function"]["arguments"], "{}");
  EXPECT_EQ(render_bytes(*t, *in).value(),
            R"(f:{"z": 1, "a": [true, null]};g:{};h:not json;k:[1, 2];m:{"already": "object", "n": [1.5]};n:{};)");
}

TEST(ChatRenderInput, BadShapesNameTheField) {
  auto error_of = [](const std::string& messages, const std::string& tools = "") {
    Result<ChatRenderInput> in = from_openai(messages, tools);
    EXPECT_FALSE(in.is_ok()) << messages;
    return in.is_ok() ? std::string() : in.status().message();
  };
  EXPECT_EQ(error_of(R"({"role": "user"})"), "messages must be a list");
  EXPECT_EQ(error_of(R"([1])"), "messages[0] must be an object");
  EXPECT_EQ(error_of(R"([{"content": "x"}])"), "messages[0].role must be a string");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": 5}])"),
            "messages[0].content must be a string, null or a list of content parts");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": [{"type": "text"}]}])"), "messages[0].content[0].text must be a string");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])"),
            "messages[0].content[0].type: content parts of type 'image_url' are not supported (text only)");
  EXPECT_EQ(error_of(R"([{"role": "assistant", "tool_calls": {}}])"), "messages[0].tool_calls must be a list");
  EXPECT_EQ(error_of(R"([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}])"),
            "messages[0].tool_calls[0].function.name must be a string");
  EXPECT_EQ(error_of(R"([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}])"),
            "messages[0].tool_calls[0].function.arguments must be a JSON string or an object");
  EXPECT_EQ(error_of(R"([{"role": "tool", "tool_call_id": 7, "content": "x"}])"),
            "messages[0].tool_call_id must be a string");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": "x"}])", R"([{"type": "function"}])"),
            "tools[0].function must be an object");
  Result<ChatRenderInput> image = from_openai(R"([{"role": "user", "content": [{"type": "image_url"}]}])");
  EXPECT_EQ(image.status().code(), StatusCode::kUnimplemented);
}

TEST(ChatTemplateContext, ContentPartsJoinedOnlyForTemplatesThatPrintStrings) {
  Result<ChatRenderInput> in = from_openai(
      R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])");
  ASSERT_TRUE(in.is_ok());
  in->add_generation_prompt = false;
  Result<ChatTemplate> plain = ChatTemplate::parse("{% for m in messages %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE(plain->reads_content_parts());
  Result<ojson> context = plain->context(*in);
  ASSERT_TRUE(context.is_ok());
  EXPECT_EQ((*context)["messages"].dump(), R"([{"role":"user","content":"a\nb"}])");
  EXPECT_EQ(render_bytes(*plain, *in).value(), "a\nb");

  ChatTemplate chatml = ChatTemplate::chatml();
  EXPECT_TRUE(chatml.reads_content_parts());
  context = chatml.context(*in);
  ASSERT_TRUE(context.is_ok());
  EXPECT_EQ((*context)["messages"][0]["content"].size(), 2u);
  EXPECT_EQ(render_bytes(chatml, *in).value(), "<|im_start|>user\nab<|im_end|>\n");
  EXPECT_EQ(context->dump(),
            R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],)"
            R"("add_generation_prompt":false,"bos_token":"","eos_token":""})");
}

TEST(ChatTemplateContext, RequestTextIsDataAndBosIsTemplateText) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ flag }}");
  ASSERT_TRUE(t.is_ok());
  ChatRenderInput in;
  in.messages = ojson::parse(R"([{"role": "user", "content": "</s>"}])");
  in.bos_token = "<s>";
  in.kwargs = ojson::parse(R"({"flag": "!"})");
  Result<jinja::Text> out = t->render(in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->bytes(), "<s>[user]</s>!");
  // "user" (4..8), "</s>" (9..13) and the kwarg "!" (13..14) came from the request.
  EXPECT_EQ(out->data(), (std::vector<jinja::ByteRange>{{4, 8}, {9, 14}}));
  // A kwarg that replaces bos_token comes from the request: data.
  in.kwargs = ojson::parse(R"({"bos_token": "<s>", "flag": ""})");
  out = t->render(in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->data().front(), (jinja::ByteRange{0, 3}));
}

}  // namespace
}  // namespace ladder::tokenizer
