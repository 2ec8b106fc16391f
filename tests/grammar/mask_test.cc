// The fast token mask against brute force (every token's bytes fed to the
// matcher and rolled back) on real vocabularies, at every step of random
// walks through grammars whose rule boundaries fall inside tokens.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar/tool_call_grammar.h"
#include "grammar_test_util.h"

namespace ladder::grammar {
namespace {

// Generic JSON with bounded whitespace, written by hand.
constexpr const char* kJsonGbnf = R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
ws ::= ( " " | "\n" [ \t]{0,20} )?
)";

// Ambiguous, nullable, UTF-8 classes, and a rule (word) that ends inside most
// tokens that start in it.
constexpr const char* kTextGbnf = R"(root ::= sentence ( " " sentence )* "."?
sentence ::= word ( ( " " | ", " ) word ){0,6} [.!?]
word ::= [a-zA-Z]+ | [а-яА-Я]+ | "Lily" | "L" [a-z]* | opt opt "the"
opt ::= "" | "a"
)";

struct VocabCase {
  const char* path;
  int walks;
};

void compare_on(const char* gbnf, const VocabCase& vc, int max_steps, int closing_after) {
  auto vocab = testing::shared_vocabulary(vc.path);
  ASSERT_NE(vocab, nullptr);
  auto g = testing::compile_gbnf(gbnf, vocab);
  ASSERT_NE(g, nullptr);
  int steps = 0;
  for (int w = 0; w < vc.walks; ++w) {
    testing::WalkResult r =
        testing::random_walk(g, 1000 + static_cast<uint64_t>(w), max_steps, closing_after, true);
    EXPECT_EQ(r.mismatches, 0) << vc.path << " walk " << w;
    steps += r.steps;
  }
  EXPECT_GT(steps, vc.walks * 3) << "the walks should visit many states";
}

const VocabCase kVocabs[] = {
    {"models/stories260K.gguf", 6},           {"models/llama-2-tiny-random.gguf", 3},
    {"tokenizers/ggml-vocab-gpt-2.gguf", 2},  {"tokenizers/ggml-vocab-deepseek-llm.gguf", 1},
    {"tokenizers/ggml-vocab-falcon.gguf", 1},  // lacks some single bytes
};

TEST(GrammarMask, JsonMatchesBruteForce) {
  for (const VocabCase& vc : kVocabs) compare_on(kJsonGbnf, vc, 60, 40);
}

TEST(GrammarMask, AmbiguousTextMatchesBruteForce) {
  for (const VocabCase& vc : kVocabs) compare_on(kTextGbnf, vc, 30, 20);
}

TEST(GrammarMask, SchemaGrammarsMatchBruteForce) {
  auto gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 20}, "kind": {"enum": ["cat", "dog"]},
    "age": {"type": "integer", "minimum": -3, "maximum": 130},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+( [a-z]+)?$"}, "maxItems": 3},
    "born": {"type": "string", "format": "date"}, "extra": {"type": "object"}},
    "required": ["name", "kind", "age"], "additionalProperties": false})"));
  ASSERT_TRUE(gbnf.is_ok()) << gbnf.status().to_string();
  for (const VocabCase& vc : kVocabs) compare_on(gbnf.value().c_str(), vc, 60, 40);
}

// The Llama 2 vocabulary with Mistral's markers added as special tokens.
std::shared_ptr<const TokenVocabulary> llama_with_markers() {
  auto base = testing::shared_vocabulary("models/llama-2-tiny-random.gguf");
  if (!base) return nullptr;
  std::vector<std::string> pieces;
  std::vector<bool> special;
  for (int32_t id = 0; id < base->size(); ++id) {
    pieces.emplace_back(base->piece(id));
    special.push_back(base->is_special(id));
  }
  for (const char* m : {"[TOOL_CALLS]", "[ARGS]"}) {
    pieces.emplace_back(m);
    special.push_back(true);
  }
  return TokenVocabulary::create(pieces, special, base->end_ids()).value();
}

TEST(GrammarMask, ToolGrammarsWithMarkerTokensMatchBruteForce) {
  auto vocab = llama_with_markers();
  ASSERT_NE(vocab, nullptr);
  auto tools = parse_openai_tools(nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])"));
  ASSERT_TRUE(tools.is_ok());
  for (ToolCallFormat format :
       {ToolCallFormat::kMistralArgs, ToolCallFormat::kMistralJsonArray, ToolCallFormat::kHermes}) {
    ToolGrammarOptions options;
    options.format = format;
    auto gbnf = tool_call_gbnf(tools.value(), options, vocab.get());
    ASSERT_TRUE(gbnf.is_ok());
    auto g = testing::compile_gbnf(gbnf.value(), vocab);
    ASSERT_NE(g, nullptr);
    for (int w = 0; w < 2; ++w) {
      testing::WalkResult r = testing::random_walk(g, 50 + static_cast<uint64_t>(w), 80, 50, true);
      EXPECT_EQ(r.mismatches, 0) << tool_call_format_name(format);
      EXPECT_TRUE(r.ended) << r.text;
      if (format != ToolCallFormat::kHermes) {
        EXPECT_EQ(r.text.rfind("[TOOL_CALLS]", 0), 0u) << r.text;
      }
    }
  }
}

TEST(GrammarMask, VocabularyTrieHoldsEveryOrdinaryToken) {
  auto vocab = testing::shared_vocabulary("models/llama-2-tiny-random.gguf");
  ASSERT_NE(vocab, nullptr);
  EXPECT_TRUE(vocab->covers_all_bytes());
  const auto& trie = vocab->trie();
  int in_trie = 0;
  for (int32_t id = 0; id < vocab->size(); ++id) {
    int32_t node = vocab->node_of(id);
    if (node < 0) {
      EXPECT_TRUE(vocab->is_special(id) || vocab->piece(id).empty()) << id;
      continue;
    }
    ++in_trie;
    // The path from the root spells the piece.
    std::string spelled;
    for (int32_t n = node; n != 0; n = trie[n].parent)
      spelled.insert(spelled.begin(), static_cast<char>(trie[n].byte));
    EXPECT_EQ(spelled, vocab->piece(id)) << id;
  }
  EXPECT_GT(in_trie, 31000);
  EXPECT_TRUE(vocab->is_end(2));  // </s>
  auto falcon = testing::shared_vocabulary("tokenizers/ggml-vocab-falcon.gguf");
  ASSERT_NE(falcon, nullptr);
  EXPECT_FALSE(falcon->covers_all_bytes());  // bytes 03 04 05 0B ... have no token
  EXPECT_TRUE(testing::shared_vocabulary("tokenizers/ggml-vocab-gpt-2.gguf")->covers_all_bytes());
}

}  // namespace
}  // namespace ladder::grammar
