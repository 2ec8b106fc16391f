// Tool calls: parsing the formats models really write (expected results
// written by hand), streaming split at every byte, format detection on real
// chat templates, and forced-call grammars whose random outputs parse back
// into calls with arguments that validate (python3-jsonschema).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/tool_call_grammar.h"
#include "grammar/tool_call_parser.h"
#include "grammar_test_util.h"

namespace ladder::grammar {
namespace {

struct ExpectedCall {
  std::string name;
  std::string arguments;
};

struct ParseCase {
  ToolCallFormat format;
  std::string text;
  std::string content;
  std::vector<ExpectedCall> calls;
};

const std::vector<ParseCase>& parse_cases() {
  static const std::vector<ParseCase> cases = {
      // Qwen 2.5 / Hermes 3: text, then blocks.
      {ToolCallFormat::kHermes,
       "I'll check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
       "\"unit\": \"c\"}}\n"
       "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
       "I'll check both.",
       {{"get_weather", R"({"city": "Paris", "unit": "c"})"}, {"get_time", "{}"}}},
      // Hermes 2 Pro writes arguments first.
      {ToolCallFormat::kHermes,
       "<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": "
       "\"get_stock_fundamentals\"}\n</tool_call>",
       "",
       {{"get_stock_fundamentals", R"({"symbol": "TSLA"})"}}},
      // Strings holding braces and escaped quotes; text after the call.
      {ToolCallFormat::kHermes,
       "<tool_call>{\"name\":\"say\",\"arguments\":{\"text\":\"a } \\\" ] {\"}}</tool_call> done",
       "done",
       {{"say", R"({"text":"a } \" ] {"})"}}},
      // Arguments written as a string of JSON; no arguments at all.
      {ToolCallFormat::kHermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call><tool_call>{\"name\": "
       "\"g\"}</tool_call>",
       "",
       {{"f", R"({"a": 1})"}, {"g", "{}"}}},
      // Not a call: the block stays text, markers and all but the first.
      {ToolCallFormat::kHermes, "<tool_call>not json</tool_call> ok", "not json</tool_call> ok", {}},
      {ToolCallFormat::kHermes, "a < b and <tool", "a < b and <tool", {}},
      {ToolCallFormat::kHermes, "plain text  \n", "plain text  \n", {}},
      // Cut off before its name: nothing of it is content.
      {ToolCallFormat::kHermes, "Sure.\n<tool_call>\n{\"na", "Sure.", {}},
      // Llama 3.x.
      {ToolCallFormat::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "",
       {{"get_weather", R"({"city": "Paris"})"}}},
      {ToolCallFormat::kLlama3Json,
       "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": 1.5}}",
       "",
       {{"f", R"({"x": 1.5})"}}},
      {ToolCallFormat::kLlama3Json,
       " {\"type\": \"function\", \"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
       "{\"k\": null}}",
       "",
       {{"a", "{}"}, {"b", R"({"k": null})"}}},
      {ToolCallFormat::kLlama3Json,
       "{\"answer\": 42, \"name\": \"x\"}",
       "{\"answer\": 42, \"name\": \"x\"}",
       {}},
      {ToolCallFormat::kLlama3Json, "{\"name\": 3}", "{\"name\": 3}", {}},
      {ToolCallFormat::kLlama3Json, "The answer is {\"name\": \"f\"}", "The answer is {\"name\": \"f\"}", {}},
      {ToolCallFormat::kLlama3Json, "  \n", "  \n", {}},
      // Mistral v3: a JSON array after the marker.
      {ToolCallFormat::kMistralJsonArray,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
       "\"abc123def\"}, "
       "{\"name\": \"f2\", \"arguments\": {}}]",
       "",
       {{"get_weather", R"({"city": "Paris"})"}, {"f2", "{}"}}},
      {ToolCallFormat::kMistralJsonArray,
       "Sure. [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": \"[b]\"}}]",
       "Sure.",
       {{"f", R"({"a": "[b]"})"}}},
      // Mistral v11+: name[ARGS]arguments per call; [CALL_ID] gives the id.
      {ToolCallFormat::kMistralArgs,
       "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}",
       "",
       {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}}},
      {ToolCallFormat::kMistralArgs,
       "Let me see.[TOOL_CALLS]f[ARGS] {\"q\": [1, {\"r\": \"]\"}]}\nThanks",
       "Let me see.Thanks",
       {{"f", R"({"q": [1, {"r": "]"}]})"}}},
      {ToolCallFormat::kMistralArgs, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]", "", {{"f", "{}"}}},
      {ToolCallFormat::kMistralArgs, "[TOOL_CALLS]what is this? [ARGS", "what is this? [ARGS", {}},
  };
  return cases;
}

void expect_parsed(const ParseCase& c, const ParsedToolCalls& got, const std::string& how) {
  EXPECT_EQ(got.content, c.content) << how << "\n" << c.text;
  ASSERT_EQ(got.tool_calls.size(), c.calls.size()) << how << "\n" << c.text;
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(got.tool_calls[i].name, c.calls[i].name) << how << "\n" << c.text;
    EXPECT_EQ(got.tool_calls[i].arguments, c.calls[i].arguments) << how << "\n" << c.text;
    EXPECT_FALSE(got.tool_calls[i].id.empty());
  }
}

TEST(ToolCallParser, RealFormats) {
  for (const ParseCase& c : parse_cases()) expect_parsed(c, parse_tool_calls(c.format, c.text, 1), "whole");
}

TEST(ToolCallParser, IdsHaveTheFormatsShape) {
  auto hermes = parse_tool_calls(ToolCallFormat::kHermes, parse_cases()[0].text, 5);
  ASSERT_EQ(hermes.tool_calls.size(), 2u);
  EXPECT_EQ(hermes.tool_calls[0].id.substr(0, 5), "call_");
  EXPECT_EQ(hermes.tool_calls[0].id.size(), 29u);
  EXPECT_NE(hermes.tool_calls[0].id, hermes.tool_calls[1].id);
  auto mistral = parse_tool_calls(ToolCallFormat::kMistralArgs, "[TOOL_CALLS]f[ARGS]{}", 5);
  ASSERT_EQ(mistral.tool_calls.size(), 1u);
  EXPECT_EQ(mistral.tool_calls[0].id.size(), 9u);
  auto given =
      parse_tool_calls(ToolCallFormat::kMistralArgs, "[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{\"x\":1}", 5);
  ASSERT_EQ(given.tool_calls.size(), 1u);
  EXPECT_EQ(given.tool_calls[0].id, "a1b2c3d4e");
  EXPECT_EQ(given.tool_calls[0].arguments, "{\"x\":1}");
}

// Assembles stream deltas, checking the OpenAI delta protocol on the way.
struct Assembled {
  ParsedToolCalls parsed;
  void add(const ToolCallStreamDelta& d, const std::string& how) {
    parsed.content += d.content;
    for (const ToolCallDelta& t : d.tool_calls) {
      if (!t.id.empty()) {
        EXPECT_EQ(t.index, static_cast<int32_t>(parsed.tool_calls.size())) << how;
        EXPECT_FALSE(t.name.empty()) << how;
        EXPECT_TRUE(t.arguments.empty()) << how << ": the first delta carries id and name only";
        parsed.tool_calls.push_back({t.id, t.name, ""});
      } else {
        EXPECT_TRUE(t.name.empty()) << how;
        ASSERT_EQ(t.index + 1, static_cast<int32_t>(parsed.tool_calls.size()))
            << how << ": fragment of a call not begun";
        parsed.tool_calls.back().arguments += t.arguments;
      }
    }
  }
};

// Output cut off by max_tokens: complete calls come back clean; a call cut
// inside its arguments is not a call of the result (a stream has sent its
// fragments already); a marker half written at the end is not content.
TEST(ToolCallParser, CutOffOutputLeavesNoBrokenCallAndNoMarker) {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n";
  ToolCallParser p(ToolCallFormat::kHermes, 3);
  Assembled streamed;
  streamed.add(p.push(call + call + "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\": [1, 2"), "cut");
  streamed.add(p.finish(/*cut_off=*/true), "cut");
  ASSERT_EQ(p.result().tool_calls.size(), 2u);
  for (const ToolCall& c : p.result().tool_calls) {
    EXPECT_EQ(c.name, "f");
    EXPECT_EQ(c.arguments, R"({"a": 1})");
  }
  EXPECT_EQ(p.result().content, "");
  ASSERT_EQ(streamed.parsed.tool_calls.size(), 3u);
  EXPECT_EQ(streamed.parsed.tool_calls[2].arguments, R"({"a": [1, 2)");

  ToolCallParser q(ToolCallFormat::kHermes, 3);
  Assembled a;
  a.add(q.push(call + "a < b and <tool"), "marker");
  a.add(q.finish(/*cut_off=*/true), "marker");
  EXPECT_EQ(a.parsed.content, "a < b and");
  EXPECT_EQ(q.result().content, "a < b and");
  EXPECT_EQ(q.result().tool_calls.size(), 1u);
  // Named, its arguments whole, only the closing brace and tag missing: a call.
  const ParsedToolCalls closed_late =
      parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1} ", 3);
  ASSERT_EQ(closed_late.tool_calls.size(), 1u);
  EXPECT_EQ(closed_late.tool_calls[0].arguments, R"({"a": 1})");
  // The same text ended by the model itself: what it wrote is content.
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHermes, "a < b and <tool", 3).content, "a < b and <tool");
}

TEST(ToolCallParser, StreamingSplitAtEveryByteMatchesTheWhole) {
  for (const ParseCase& c : parse_cases()) {
    const ParsedToolCalls whole = parse_tool_calls(c.format, c.text, 9);
    for (size_t k = 0; k <= c.text.size(); ++k) {
      const std::string how = "split at " + std::to_string(k);
      ToolCallParser p(c.format, 9);
      Assembled a;
      a.add(p.push(c.text.substr(0, k)), how);
      a.add(p.push(c.text.substr(k)), how);
      a.add(p.finish(), how);
      expect_parsed(c, a.parsed, how);
      ASSERT_EQ(a.parsed.tool_calls.size(), whole.tool_calls.size());
      for (size_t i = 0; i < whole.tool_calls.size(); ++i)
        EXPECT_EQ(a.parsed.tool_calls[i].id, whole.tool_calls[i].id);
    }
    // One byte at a time: content never shows a marker, even partly.
    ToolCallParser p(c.format, 9);
    Assembled a;
    for (char ch : c.text) {
      ToolCallStreamDelta d = p.push(std::string(1, ch));
      if (!c.calls.empty()) {
        for (const char* m : {"<tool_call", "[TOOL_CALLS", "<|python_tag", "[ARGS"}) {
          EXPECT_EQ(d.content.find(m), std::string::npos) << c.text;
        }
      }
      a.add(d, "byte by byte");
    }
    a.add(p.finish(), "byte by byte");
    expect_parsed(c, a.parsed, "byte by byte");
  }
}

TEST(ToolCallFormat, DetectedFromRealChatTemplates) {
  struct TemplateCase {
    const char* file;
    ToolCallFormat format;
    bool detected;
  };
  const TemplateCase cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes, true},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes, true},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermes, true},
      {"ibm-granite-granite-4.0.jinja", ToolCallFormat::kHermes, true},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json, true},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json, true},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3Json, true},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistralJsonArray, true},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistralArgs, true},
      {"unsloth-mistral-Devstral-Small-2507.jinja", ToolCallFormat::kMistralArgs, true},
      {"Qwen3-Coder.jinja", ToolCallFormat::kHermes, false},  // XML inside the block: not this format
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::kHermes, false},
  };
  for (const TemplateCase& c : cases) {
    const std::string path = testing::shared_path(std::string("chat-templates/") + c.file);
    ASSERT_FALSE(path.empty());
    DetectedToolCallFormat d = detect_tool_call_format(testing::read_file(path), nullptr);
    EXPECT_EQ(d.format, c.format) << c.file << ": " << tool_call_format_name(d.format);
    EXPECT_EQ(d.detected, c.detected) << c.file;
  }
  // From the vocabulary when the template says nothing.
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.push_back("[TOOL_CALLS]");
  pieces.push_back("[ARGS]");
  pieces.push_back("</s>");
  std::vector<bool> special(pieces.size(), false);
  special[256] = special[257] = special[258] = true;
  auto v = TokenVocabulary::create(pieces, special, {258});
  ASSERT_TRUE(v.is_ok());
  DetectedToolCallFormat d = detect_tool_call_format("{{ messages }}", v.value().get());
  EXPECT_EQ(d.format, ToolCallFormat::kMistralArgs);
  EXPECT_TRUE(d.detected);
}

const char* kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                  "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
   "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 5}, "b": {"type": "integer"}},
   "required": ["a", "b"]}}}
])";

// A vocabulary of bytes, a few words, Mistral's markers as special tokens and an end token.
std::shared_ptr<const TokenVocabulary> marker_vocabulary() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char* w : {"{\"", "\": ", "\"name", "get_", "weather", "\", \"", "}}", "[{", "<tool_call>",
                        "</s>", "[TOOL_CALLS]", "[ARGS]"}) {
    pieces.push_back(w);
  }
  std::vector<bool> special(pieces.size(), false);
  const int32_t n = static_cast<int32_t>(pieces.size());
  special[n - 3] = special[n - 2] = special[n - 1] = true;  // </s>, [TOOL_CALLS], [ARGS]
  return TokenVocabulary::create(pieces, special, {n - 3}).value();
}

// The preamble for templates that do not render tools: every tool's name,
// description and schema, and the call syntax of the format the server
// parses -- a call written as it says parses back as that call.
TEST(ToolCallFormat, PreambleNamesEveryToolAndTheFormatsSyntax) {
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])");
  const std::string hermes = tool_preamble(tools, ToolCallFormat::kHermes);
  EXPECT_NE(hermes.find(R"({"name":"get_weather","description":"Weather in a city.","parameters":{"type":"object",)"
                        R"("properties":{"city":{"type":"string"}},"required":["city"]}})"),
            std::string::npos)
      << hermes;
  EXPECT_NE(hermes.find(R"({"name":"get_time","parameters":{}})"), std::string::npos) << hermes;
  EXPECT_NE(hermes.find(R"(<tool_call>{"name": NAME, "arguments": ARGUMENTS}</tool_call>)"), std::string::npos);
  EXPECT_NE(tool_preamble(tools, ToolCallFormat::kLlama3Json).find(R"({"name": NAME, "parameters": ARGUMENTS})"),
            std::string::npos);
  EXPECT_NE(tool_preamble(tools, ToolCallFormat::kMistralJsonArray).find("[TOOL_CALLS][{"), std::string::npos);
  EXPECT_NE(tool_preamble(tools, ToolCallFormat::kMistralArgs).find("[TOOL_CALLS]NAME[ARGS]ARGUMENTS"),
            std::string::npos);
  // Written as the preamble says, a Hermes call parses.
  ToolCallParser parser(ToolCallFormat::kHermes, 1);
  parser.push(R"(<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>)");
  parser.finish();
  ASSERT_EQ(parser.result().tool_calls.size(), 1u);
  EXPECT_EQ(parser.result().tool_calls[0].name, "get_weather");
  EXPECT_TRUE(parser.result().content.empty());
}

TEST(ToolCallGrammar, ForcedCallsParseBackAndValidate) {
  auto tools = parse_openai_tools(nlohmann::ordered_json::parse(kToolsJson));
  ASSERT_TRUE(tools.is_ok()) << tools.status().to_string();
  std::vector<nlohmann::json> schemas;
  for (const ToolSpec& t : tools.value()) schemas.push_back(nlohmann::json::parse(t.parameters.dump()));
  auto stories = testing::shared_vocabulary("models/stories260K.gguf");
  ASSERT_NE(stories, nullptr);
  std::vector<std::pair<size_t, std::string>> arguments;
  int n_calls = 0;
  for (ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json,
                                ToolCallFormat::kMistralJsonArray, ToolCallFormat::kMistralArgs}) {
    for (const std::string& function : {std::string(), std::string("add")}) {
      for (const auto& vocab : {marker_vocabulary(), stories}) {
        ToolGrammarOptions options;
        options.format = format;
        options.function = function;
        auto gbnf = tool_call_gbnf(tools.value(), options, vocab.get());
        ASSERT_TRUE(gbnf.is_ok()) << gbnf.status().to_string();
        auto g = testing::compile_gbnf(gbnf.value(), vocab);
        ASSERT_NE(g, nullptr);
        for (int w = 0; w < 6; ++w) {
          testing::WalkResult r = testing::random_walk(g, 100 + w, 800, 40, false);
          ASSERT_TRUE(r.ended) << tool_call_format_name(format) << ": " << r.text;
          ParsedToolCalls parsed = parse_tool_calls(format, r.text, 3);
          EXPECT_EQ(parsed.content, "") << tool_call_format_name(format) << ": " << r.text;
          ASSERT_FALSE(parsed.tool_calls.empty()) << tool_call_format_name(format) << ": " << r.text;
          if (format == ToolCallFormat::kLlama3Json) {
            EXPECT_EQ(parsed.tool_calls.size(), 1u);
          }
          for (const ToolCall& call : parsed.tool_calls) {
            if (!function.empty()) {
              EXPECT_EQ(call.name, function);
            }
            size_t tool = 0;
            while (tool < tools.value().size() && tools.value()[tool].name != call.name) ++tool;
            ASSERT_LT(tool, tools.value().size()) << call.name;
            arguments.emplace_back(tool, call.arguments);
            ++n_calls;
          }
        }
      }
    }
  }
  std::vector<std::string> verdicts = testing::python_verdicts(schemas, arguments);
  for (size_t k = 0; k < verdicts.size() && k < arguments.size(); ++k) {
    EXPECT_EQ(verdicts[k], "valid") << arguments[k].second;
  }
  EXPECT_GE(n_calls, 96);
}

TEST(ToolCallGrammar, MatchesWhatTemplatesShowAndUsesMarkerTokens) {
  auto tools = parse_openai_tools(nlohmann::ordered_json::parse(kToolsJson)).value();
  ToolGrammarOptions hermes;
  auto g = testing::compile_gbnf(tool_call_gbnf(tools, hermes, nullptr).value());
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(testing::full_match(g,
                                  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                                  "\"Paris\", \"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_TRUE(testing::full_match(
      g,
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": -5, \"b\": 7}}\n</tool_call>"));
  EXPECT_FALSE(testing::full_match(g, "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(testing::full_match(
      g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 6, \"b\": 7}}\n</tool_call>"));
  EXPECT_FALSE(
      testing::full_match(g, "Sure! <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  hermes.parallel = false;
  g = testing::compile_gbnf(tool_call_gbnf(tools, hermes, nullptr).value());
  EXPECT_FALSE(testing::full_match(g,
                                   "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"
                                   "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  // Mistral markers that are special tokens are named as tokens.
  ToolGrammarOptions mistral;
  mistral.format = ToolCallFormat::kMistralArgs;
  mistral.function = "get_time";
  auto vocab = marker_vocabulary();
  const std::string text = tool_call_gbnf(tools, mistral, vocab.get()).value();
  EXPECT_NE(text.find("<\"[TOOL_CALLS]\"> \"get_time\" <\"[ARGS]\">"), std::string::npos) << text;
  EXPECT_EQ(tool_call_gbnf(tools, mistral, nullptr).value().find("<\""), std::string::npos);
  // Bad requests.
  ToolGrammarOptions missing;
  missing.function = "nope";
  EXPECT_EQ(tool_call_gbnf(tools, missing, nullptr).status().message(),
            "tool_choice names function 'nope', which is not among the tools");
  EXPECT_EQ(parse_openai_tools(nlohmann::ordered_json::parse(R"([{"type":"function","function":{}}])"))
                .status()
                .message(),
            "tools[0].function.name must be a non-empty string");
  EXPECT_EQ(
      parse_openai_tools(
          nlohmann::ordered_json::parse(
              R"([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}])"))
          .status()
          .message(),
      "tools[1]: a second tool named 'a'");
  auto bad = parse_openai_tools(nlohmann::ordered_json::parse(
      R"([{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"not":{}}}}}}])"));
  ASSERT_TRUE(bad.is_ok());
  ToolGrammarOptions any;
  auto r = tool_call_gbnf(bad.value(), any, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "tool 'a' parameters: json_schema: keyword 'not' at /properties/x is not supported");
}

}  // namespace
}  // namespace ladder::grammar
