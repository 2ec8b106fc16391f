// The recogniser against hand-written strings: every expected answer below
// was worked out by hand from the grammar, not by running the matcher.
#include <gtest/gtest.h>

#include "grammar/grammar_cache.h"
#include "grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace ladder::grammar {
namespace {

using testing::compile_gbnf;
using testing::full_match;
using testing::viable_prefix;

struct Case {
  const char* text;
  bool full;    // a complete match
  bool viable;  // a prefix of some match
};

void check(const char* gbnf, const std::vector<Case>& cases) {
  auto g = compile_gbnf(gbnf);
  ASSERT_NE(g, nullptr);
  for (const Case& c : cases) {
    EXPECT_EQ(full_match(g, c.text), c.full) << gbnf << "\n  text: \"" << c.text << "\"";
    EXPECT_EQ(viable_prefix(g, c.text), c.viable) << gbnf << "\n  text: \"" << c.text << "\"";
  }
}

TEST(GrammarMatcher, LiteralsAndSequences) {
  check(R"(root ::= "ab" "c")", {{"abc", true, true},
                                 {"ab", false, true},
                                 {"", false, true},
                                 {"abd", false, false},
                                 {"abcc", false, false}});
  check(R"(root ::= "\x41\u00e9\n\t\"\\")", {{"A\xC3\xA9\n\t\"\\", true, true}, {"A\xC3", false, true}});
}

TEST(GrammarMatcher, AlternativesAndNullableRules) {
  check(R"(root ::= a b
a ::= "x" | ""
b ::= "y"?)",
        {{"", true, true}, {"x", true, true}, {"y", true, true}, {"xy", true, true}, {"yx", false, false}});
  // Nullable rules nested three deep in front of a terminal.
  check(R"(root ::= a a a "z"
a ::= b
b ::= "" | "q")",
        {{"z", true, true},
         {"qz", true, true},
         {"qqqz", true, true},
         {"qqqqz", false, false},
         {"qqq", false, true}});
  check(R"(root ::= "")", {{"", true, true}, {"a", false, false}});
}

TEST(GrammarMatcher, AmbiguousGrammars) {
  // x x with x in {"", "a", "aa"}: zero to four a's, several parses each.
  check(R"(root ::= x x
x ::= "a" | "aa" | "")",
        {{"", true, true},
         {"a", true, true},
         {"aa", true, true},
         {"aaa", true, true},
         {"aaaa", true, true},
         {"aaaaa", false, false}});
  // The classic ambiguous expression grammar (and left-recursive).
  check(R"(root ::= root "+" root | "n")", {{"n", true, true},
                                            {"n+n+n", true, true},
                                            {"n+", false, true},
                                            {"+n", false, false},
                                            {"nn", false, false}});
}

TEST(GrammarMatcher, RecursionAndBalance) {
  check(R"g(root ::= "(" root ")" root | "")g", {{"", true, true},
                                                 {"()", true, true},
                                                 {"(())()", true, true},
                                                 {"(()", false, true},
                                                 {")(", false, false},
                                                 {"())", false, false}});
  check(R"(root ::= root "a" | "b")", {{"b", true, true}, {"baaa", true, true}, {"a", false, false}});
}

TEST(GrammarMatcher, Repetition) {
  check(R"(root ::= "a"{2,4})",
        {{"a", false, true}, {"aa", true, true}, {"aaaa", true, true}, {"aaaaa", false, false}});
  check(R"(root ::= "ab"{3})", {{"abab", false, true}, {"ababab", true, true}, {"abababa", false, false}});
  check(R"(root ::= "a"{2,} "b")", {{"ab", false, false}, {"aab", true, true}, {"aaaaaab", true, true}});
  check(R"(root ::= ("x" "y"?)* "z")", {{"z", true, true}, {"xxyxz", true, true}, {"yz", false, false}});
  check(R"(root ::= "a"+ "b"?)",
        {{"", false, true}, {"a", true, true}, {"aab", true, true}, {"b", false, false}});
  // A repetition of something nullable must not loop forever.
  check(R"(root ::= ("a"?)* "b")", {{"b", true, true}, {"aab", true, true}});
  check(R"(root ::= ("a"? "b"?){0,3} "c")",
        {{"c", true, true}, {"ababc", true, true}, {"abababc", true, true}, {"ababababc", false, false}});
}

TEST(GrammarMatcher, CharacterClassesAreUtf8) {
  check(R"(root ::= [a-c0-9_]+)", {{"abc_09", true, true}, {"d", false, false}, {"", false, true}});
  // Cyrillic: two-byte characters; a first byte alone is a viable prefix.
  check(R"(root ::= [а-я]+)",
        {{"привет", true, true}, {"\xD0", false, true}, {"hello", false, false}, {"\xD0\x41", false, false}});
  // Negation covers every other scalar value, of any length, never raw bytes.
  check(R"(root ::= [^a"\\]*)", {{"b\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", true, true},
                                 {"a", false, false},
                                 {"\"", false, false},
                                 {"\xFF", false, false},
                                 {"\xED\xA0\x80", false, false},  // an encoded surrogate is not UTF-8
                                 {"\xF0\x9F", false, true}});
  check(R"(root ::= . .)",
        {{"a\xF0\x9F\x98\x80", true, true}, {"ab", true, true}, {"a", false, true}, {"abc", false, false}});
  // Ranges across encoding lengths: U+007E..U+0801 holds 1-, 2- and 3-byte characters.
  check(R"(root ::= [\x7E-\u0801])", {{"~", true, true},
                                      {"\x7F", true, true},
                                      {"\xC2\x80", true, true},
                                      {"\xDF\xBF", true, true},
                                      {"\xE0\xA0\x80", true, true},
                                      {"\xE0\xA0\x81", true, true},
                                      {"\xE0\xA0\x82", false, false},
                                      {"}", false, false}});
}

TEST(GrammarMatcher, TokensNamedInTheGrammar) {
  auto vocab = testing::byte_vocabulary();
  const int32_t ctl = vocab->size() - 1;
  const int32_t eos = vocab->size() - 2;
  auto g = compile_gbnf(R"(root ::= <"<ctl>"> "x")", vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  std::vector<uint64_t> mask(vocab->mask_words());
  ASSERT_TRUE(m.fill_mask(mask));
  for (int32_t id = 0; id < vocab->size(); ++id) {
    EXPECT_EQ((mask[id / 64] >> (id % 64)) & 1, id == ctl ? 1u : 0u) << id;
  }
  EXPECT_FALSE(m.accept('x'));
  EXPECT_FALSE(m.accept_bytes("<ctl>"));  // the token's text is not the token
  ASSERT_TRUE(m.accept(ctl));
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept('x'));
  EXPECT_TRUE(m.can_end());
  ASSERT_TRUE(m.fill_mask(mask));
  for (int32_t id = 0; id < vocab->size(); ++id) {
    EXPECT_EQ((mask[id / 64] >> (id % 64)) & 1, id == eos ? 1u : 0u) << id;
  }
}

TEST(GrammarMatcher, EndOfGenerationAndRollback) {
  auto vocab = testing::byte_vocabulary({"ab", "abc", "bc"});
  const int32_t ab = 256;
  const int32_t abc = 257;
  const int32_t bc = 258;
  const int32_t eos = 259;
  auto g = compile_gbnf(R"(root ::= "a" ("bc")?)", vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  std::vector<uint64_t> mask(vocab->mask_words());
  auto allowed = [&](int32_t id) { return ((mask[id / 64] >> (id % 64)) & 1) != 0; };
  ASSERT_TRUE(m.fill_mask(mask));
  EXPECT_TRUE(allowed('a'));
  EXPECT_TRUE(allowed(ab));
  EXPECT_TRUE(allowed(abc));
  EXPECT_FALSE(allowed(bc));
  EXPECT_FALSE(allowed(eos));
  EXPECT_FALSE(m.accept(eos));
  ASSERT_TRUE(m.accept('a'));
  ASSERT_TRUE(m.fill_mask(mask));
  EXPECT_TRUE(allowed(eos));  // "a" is complete, "abc" too
  EXPECT_TRUE(allowed(bc));
  EXPECT_TRUE(allowed('b'));
  EXPECT_FALSE(allowed('c'));
  ASSERT_TRUE(m.accept(bc));
  ASSERT_TRUE(m.fill_mask(mask));
  for (int32_t id = 0; id < vocab->size(); ++id) EXPECT_EQ(allowed(id), id == eos) << id;
  ASSERT_TRUE(m.accept(eos));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept('a'));
  ASSERT_TRUE(m.fill_mask(mask));
  for (int32_t id = 0; id < vocab->size(); ++id) EXPECT_EQ(allowed(id), id == eos) << id;
  // Roll back the end and "bc": "a" again, and a different continuation.
  m.rollback(2);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(m.n_steps(), 1);
  ASSERT_TRUE(m.accept('b'));
  EXPECT_FALSE(m.can_end());
  m.rollback(2);
  EXPECT_EQ(m.n_steps(), 0);
  ASSERT_TRUE(m.accept(abc));
  EXPECT_TRUE(m.can_end());
  // A refused token leaves the state as it was.
  EXPECT_FALSE(m.accept('a'));
  EXPECT_EQ(m.n_steps(), 1);
  EXPECT_TRUE(m.can_end());
}

TEST(GrammarCompile, RulesThatCanNeverFinishAreErrors) {
  auto vocab = testing::byte_vocabulary();
  auto r = CompiledGrammar::from_gbnf(R"(root ::= "a" item
item ::= "b" item)",
                                      vocab);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("rules 'root', 'item' can never be completed"), std::string::npos)
      << r.status().message();
  r = CompiledGrammar::from_gbnf(R"(root ::= "a" root)", vocab);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("'root'"), std::string::npos) << r.status().message();
  r = CompiledGrammar::from_gbnf(R"(root ::= <"[TOOL_CALLS]"> "x")", vocab);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("<\"[TOOL_CALLS]\">"), std::string::npos) << r.status().message();
  r = CompiledGrammar::from_gbnf(R"(root ::= "x" <"<eos>">)", vocab);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("end-of-generation"), std::string::npos) << r.status().message();
  r = CompiledGrammar::from_gbnf(
      R"(root ::= [a-z]{0,10000} [a-z]{0,10000} [a-z]{0,10000} ([a-z]{0,10000}){0,200})", vocab);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("grammar too large"), std::string::npos) << r.status().message();
}

TEST(GrammarCache, SharesCompiledGrammarsAndEvictsTheOldest) {
  GrammarCache cache(testing::byte_vocabulary(), 2);
  auto a = cache.get(R"(root ::= "a")");
  auto a2 = cache.get(R"(root ::= "a")");
  ASSERT_TRUE(a.is_ok() && a2.is_ok());
  EXPECT_EQ(a.value().get(), a2.value().get());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
  ASSERT_TRUE(cache.get(R"(root ::= "b")").is_ok());
  ASSERT_TRUE(cache.get(R"(root ::= "a")").is_ok());  // "a" is now the most recent
  ASSERT_TRUE(cache.get(R"(root ::= "c")").is_ok());  // evicts "b"
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get(R"(root ::= "a")").value().get(), a.value().get());
  const uint64_t misses = cache.misses();
  ASSERT_TRUE(cache.get(R"(root ::= "b")").is_ok());
  EXPECT_EQ(cache.misses(), misses + 1);
  EXPECT_FALSE(cache.get("root ::= (").is_ok());
  EXPECT_EQ(cache.size(), 2u);
}

}  // namespace
}  // namespace ladder::grammar
