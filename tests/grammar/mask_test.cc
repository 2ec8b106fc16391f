// The fast token mask against brute force (every token's bytes fed to the
// matcher and rolled back) on real vocabularies, at every step of random
// walks through grammars whose rule boundaries fall inside tokens.
#include <gtest/gtest.h>

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
    testing::WalkResult r = testing::random_walk(g, 1000 + static_cast<uint64_t>(w), max_steps, closing_after, true);
    EXPECT_EQ(r.mismatches, 0) << vc.path << " walk " << w;
    steps += r.steps;
  }
  EXPECT_GT(steps, vc.walks * 3) << "the walks should visit many states";
}

const VocabCase kVocabs[] = {
    {"models/stories260K.gguf", 6},
    {"models/llama-2-tiny-random.gguf", 3},
    {"tokenizers/ggml-vocab-gpt-2.gguf", 2},
    {"tokenizers/ggml-vocab-deepseek-llm.gguf", 1},
};

TEST(GrammarMask, JsonMatchesBruteForce) {
  for (const VocabCase& vc : kVocabs) compare_on(kJsonGbnf, vc, 60, 40);
}

TEST(GrammarMask, AmbiguousTextMatchesBruteForce) {
  for (const VocabCase& vc : kVocabs) compare_on(kTextGbnf, vc, 30, 20);
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
    for (int32_t n = node; n != 0; n = trie[n].parent) spelled.insert(spelled.begin(), static_cast<char>(trie[n].byte));
    EXPECT_EQ(spelled, vocab->piece(id)) << id;
  }
  EXPECT_GT(in_trie, 31000);
  EXPECT_TRUE(vocab->is_end(2));  // </s>
}

}  // namespace
}  // namespace ladder::grammar
