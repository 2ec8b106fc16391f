// The grammar library driving a real model: stories260K (trained on
// children's stories, never writes JSON by itself) generates under a token
// mask, sampled by the engine's own Sampler, the way a request will run:
// logits -> fill_mask -> apply_token_mask -> sample -> accept. Its output
// must parse and validate (python3-jsonschema), and a forced tool call must
// parse back into calls.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "grammar/json_schema.h"
#include "grammar/tool_call_grammar.h"
#include "grammar/tool_call_parser.h"
#include "grammar_test_util.h"
#include "model/dense_kv.h"
#include "model/model_bundle.h"
#include "ops/thread_pool.h"

namespace ladder::grammar {
namespace {

struct Generated {
  std::string text;
  int tokens = 0;
  bool ended = false;  // the grammar was complete and the model chose to end
};

// Up to max_tokens after "Once upon a time" (and within the model's context
// of 128 positions), under the grammar.
Generated generate(const model::ModelBundle& bundle, const std::shared_ptr<const CompiledGrammar>& grammar,
                   const engine::SamplingParams& params, uint64_t seed, int max_tokens) {
  const model::LlamaModel& m = *bundle.model;
  const int64_t n_vocab = m.config().n_vocab;
  std::vector<int32_t> prompt = bundle.tokenizer->encode("Once upon a time", true, false);
  max_tokens = std::min<int>(
      max_tokens, static_cast<int>(m.config().context_length - static_cast<int64_t>(prompt.size())));
  model::DenseKv kv(m.config(), 1, static_cast<int64_t>(prompt.size()) + max_tokens + 1);
  ops::ThreadPool pool(1);
  engine::Sampler sampler(params, seed);
  GrammarMatcher matcher(grammar);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<uint64_t> mask(grammar->vocabulary().mask_words());
  std::vector<int32_t> feed = prompt;
  std::vector<int32_t> output;
  int64_t pos = 0;
  Generated g;
  tokenizer::DecodeState state;  // a continuation: no space to strip
  for (; g.tokens < max_tokens; ++g.tokens) {
    model::BatchSequence seq;
    seq.tokens = feed;
    seq.start_pos = pos;
    seq.block_table = kv.block_table(0);
    Status st = m.forward({&seq, 1}, kv.buffers(), logits, pool);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st.is_ok()) break;
    pos += static_cast<int64_t>(feed.size());
    EXPECT_TRUE(matcher.fill_mask(mask));
    apply_token_mask(mask, logits);
    const int32_t next = sampler.sample(logits, prompt, output).token;
    EXPECT_TRUE(matcher.accept(next)) << "sampled a masked token " << next;
    if (matcher.is_terminated()) {
      g.ended = true;
      break;
    }
    bundle.tokenizer->append_piece(next, true, &state, &g.text);
    output.push_back(next);
    feed = {next};
  }
  return g;
}

const model::ModelBundle& stories() {
  static model::ModelBundle bundle = [] {
    auto b = model::ModelBundle::load(testing::shared_path("models/stories260K.gguf"));
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    return std::move(b).value();
  }();
  return bundle;
}

TEST(GrammarWithModel, StoriesWritesSchemaValidJson) {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
          "age": {"type": "integer", "minimum": 1, "maximum": 12},
          "pet": {"enum": ["cat", "dog", "bird"]},
          "friends": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 1},
          "happy": {"type": "boolean"}},
          "required": ["name", "age", "pet", "friends", "happy"], "additionalProperties": false})",
      R"({"type": "array", "items": {"type": "object", "properties": {"word": {"type": "string", "pattern": "^[a-z]{1,8}$"},
          "when": {"type": "string", "format": "date"}}, "required": ["word", "when"], "additionalProperties": false},
          "minItems": 1, "maxItems": 2})",
  };
  auto vocab = TokenVocabulary::from_tokenizer(*stories().tokenizer);
  std::vector<nlohmann::json> parsed_schemas;
  std::vector<std::pair<size_t, std::string>> outputs;
  for (size_t i = 0; i < std::size(schemas); ++i) {
    parsed_schemas.push_back(nlohmann::json::parse(schemas[i]));
    auto gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(schemas[i]));
    ASSERT_TRUE(gbnf.is_ok()) << gbnf.status().to_string();
    auto g = CompiledGrammar::from_gbnf(gbnf.value(), vocab);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    for (float temperature : {0.0f, 0.8f}) {
      engine::SamplingParams params;
      params.temperature = temperature;
      Generated out = generate(stories(), g.value(), params, 11 + i, 400);
      EXPECT_TRUE(out.ended) << "no end within the context: " << out.text;
      EXPECT_TRUE(nlohmann::json::accept(out.text)) << out.text;
      outputs.emplace_back(i, out.text);
    }
  }
  std::vector<std::string> verdicts = testing::python_verdicts(parsed_schemas, outputs);
  for (size_t k = 0; k < verdicts.size() && k < outputs.size(); ++k) {
    EXPECT_EQ(verdicts[k], "valid") << outputs[k].second;
  }
}

TEST(GrammarWithModel, StoriesMakesAForcedToolCall) {
  auto tools = parse_openai_tools(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "find_friend", "parameters": {"type": "object",
     "properties": {"name": {"type": "string", "maxLength": 16}, "count": {"type": "integer", "minimum": 1, "maximum": 3}},
     "required": ["name", "count"], "additionalProperties": false}}}])"));
  ASSERT_TRUE(tools.is_ok());
  auto vocab = TokenVocabulary::from_tokenizer(*stories().tokenizer);
  DetectedToolCallFormat format = detect_tool_call_format("", vocab.get());
  EXPECT_FALSE(format.detected);  // stories260K has no chat template: the fallback format
  ToolGrammarOptions options;
  options.format = format.format;
  options.function = "find_friend";
  options.parallel = false;
  auto g = CompiledGrammar::from_gbnf(tool_call_gbnf(tools.value(), options, vocab.get()).value(), vocab);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  engine::SamplingParams params;
  params.temperature = 0.7f;
  Generated out = generate(stories(), g.value(), params, 5, 300);
  ASSERT_TRUE(out.ended) << out.text;
  ParsedToolCalls calls = parse_tool_calls(format.format, out.text, 1);
  EXPECT_EQ(calls.content, "");
  ASSERT_EQ(calls.tool_calls.size(), 1u) << out.text;
  EXPECT_EQ(calls.tool_calls[0].name, "find_friend");
  std::vector<std::string> verdicts = testing::python_verdicts(
      {nlohmann::json::parse(tools.value()[0].parameters.dump())}, {{0, calls.tool_calls[0].arguments}});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0], "valid") << calls.tool_calls[0].arguments;
}

}  // namespace
}  // namespace ladder::grammar
