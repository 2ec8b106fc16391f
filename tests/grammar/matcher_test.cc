// The recogniser against hand-written strings: every expected answer below
// was worked out by hand from the grammar, not by running the matcher.
#include <gtest/gtest.h>

#include "grammar/earley.h"
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

// Right recursion, where the recogniser takes Leo's shortcut through chains
// of completions (earley.h): the answers stay those of the grammar.
TEST(GrammarMatcher, RightRecursion) {
  check(R"(root ::= "a" root | "b")", {{"", false, true},
                                       {"b", true, true},
                                       {"aab", true, true},
                                       {"aaa", false, true},
                                       {"ba", false, false}});
  // Two rules that end in each other: (xy)*z.
  check("root ::= \"x\" next | \"z\"\nnext ::= \"y\" root", {{"z", true, true},
                                                             {"xyz", true, true},
                                                             {"xyxyz", true, true},
                                                             {"xyx", false, true},
                                                             {"xz", false, false}});
  // The chain ends inside a rule that reads on: a+ then "!".
  check("root ::= list \"!\"\nlist ::= \"a\" list | \"a\"",
        {{"aaa!", true, true}, {"aaa", false, true}, {"!", false, false}, {"aa!a", false, false}});
  // An optional tail: [1], [1,1,1].
  check("root ::= \"[\" items \"]\"\nitems ::= \"1\" (\",\" items)?", {{"[1]", true, true},
                                                                       {"[1,1,1]", true, true},
                                                                       {"[1,1,", false, true},
                                                                       {"[1,,", false, false},
                                                                       {"[]", false, false}});
  // Ambiguous and right-recursive: a run of a's parsed one or two at a time,
  // so two items can wait on the rule in one set.
  check(R"(root ::= "a" root | "aa" root | "b")", {{"aaab", true, true},
                                                   {"aab", true, true},
                                                   {"ab", true, true},
                                                   {"aa", false, true},
                                                   {"aaba", false, false}});
}

// Without the shortcut every set would hold an item per enclosing level and
// the work would grow with the cube of the input (20,000 bytes: over half
// an hour; 8,192 took 146 s).
TEST(EarleyRecognizer, RightRecursionStaysLinear) {
  auto g = compile_gbnf(R"(root ::= "a" root | "a")");
  ASSERT_NE(g, nullptr);
  constexpr int kBytes = 20000;
  EarleyRecognizer rec(g->fsm());
  rec.set_budget(int64_t{64} * kBytes);
  rec.start(g->fsm().root_state());
  for (int i = 0; i < kBytes; ++i) ASSERT_TRUE(rec.advance('a')) << "byte " << i;
  EXPECT_FALSE(rec.exhausted());
  EXPECT_TRUE(rec.can_end());
  EXPECT_LE(rec.n_items(), size_t{8} * kBytes);
  // Rolled back, the cut sets' shortcuts go with them.
  rec.truncate(11);  // ten bytes read
  EXPECT_TRUE(rec.can_end());
  EXPECT_FALSE(rec.advance('b'));
  EXPECT_TRUE(rec.advance('a'));
  EXPECT_TRUE(rec.can_end());
}

// Four mutually ambiguous rules: every set holds items from every earlier
// position, and the work per byte grows with the square of the bytes read.
const char* const kAmbiguousGbnf =
    "root ::= r0\n"
    "r0 ::= r0 r1 | r1 r0 | \"a\"\n"
    "r1 ::= r1 r2 | r2 r1 | \"a\"\n"
    "r2 ::= r2 r3 | r3 r2 | \"a\"\n"
    "r3 ::= r3 r0 | r0 r3 | \"a\"\n";

// The matcher stops such a parse at its budget instead of stalling, refuses
// everything after, and reset() starts over.
TEST(GrammarMatcher, AnAmbiguousParseRunsOutOfWorkAndStaysOut) {
  auto g = compile_gbnf(kAmbiguousGbnf);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  const auto exhaust = [&m] {
    int n = 0;
    while (n < 1000 && m.accept('a')) ++n;  // the byte vocabulary: token 'a' is "a"
    return n;
  };
  ASSERT_TRUE(m.accept_bytes("aaa"));
  EXPECT_TRUE(m.can_end());
  const int n = 3 + exhaust();
  ASSERT_TRUE(m.exhausted()) << n << " bytes";
  EXPECT_GT(n, 50);
  EXPECT_FALSE(m.is_allowed('a'));
  EXPECT_FALSE(m.is_allowed(g->vocabulary().end_ids()[0]));
  m.rollback(1);
  EXPECT_TRUE(m.exhausted());
  // Straight from an exhausted call (its budget spent), reset() starts over.
  m.reset();
  EXPECT_FALSE(m.exhausted());
  EXPECT_TRUE(m.accept_bytes("aa"));
  EXPECT_TRUE(m.can_end());
  ASSERT_EQ(2 + exhaust(), n);  // the same bytes, the same budget
  std::vector<uint64_t> mask(g->vocabulary().mask_words(), ~uint64_t{0});
  EXPECT_FALSE(m.fill_mask(mask));
  for (uint64_t w : mask) EXPECT_EQ(w, 0u);
}

// A state whose walk over the vocabulary runs past kClassifyWorkPerNode calls
// every token uncertain (each then checked in its context), and takes
// bounded time doing so.
TEST(GrammarCompile, AnAmbiguousStateIsClassifiedAllUncertain) {
  auto vocab = testing::byte_vocabulary();
  std::string gbnf = "root ::= r0\n";
  for (int i = 0; i < 32; ++i) {
    const std::string a = "r" + std::to_string(i), b = "r" + std::to_string((i + 1) % 32);
    gbnf += a + " ::= " + a + " " + b + " | " + b + " " + a + " | [a-z ]\n";
  }
  auto g = compile_gbnf(gbnf, vocab);
  ASSERT_NE(g, nullptr);
  const StateTokens& st = g->state_tokens(g->fsm().root_state());
  EXPECT_TRUE(st.accepted_ids.empty());
  EXPECT_TRUE(st.accepted_bits.empty());
  EXPECT_EQ(st.uncertain_nodes.size(), 256u);  // every byte token (the end and special tokens write nothing)
  // An unambiguous grammar over the same bytes classifies them for certain.
  auto plain = compile_gbnf("root ::= [a-z ]+", vocab);
  const StateTokens& pt = plain->state_tokens(plain->fsm().root_state());
  size_t accepted = pt.accepted_ids.size();
  for (uint64_t w : pt.accepted_bits) accepted += static_cast<size_t>(__builtin_popcountll(w));
  EXPECT_EQ(accepted, 27u);
  EXPECT_TRUE(pt.uncertain_nodes.empty());
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
