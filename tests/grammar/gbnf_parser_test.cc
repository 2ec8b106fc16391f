// parse_gbnf: what it builds from good text, and the error (with its
// position) for bad text.
#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar_test_util.h"

namespace ladder::grammar {
namespace {

std::string gbnf_error_of(std::string_view text) {
  auto r = parse_gbnf(text);
  EXPECT_FALSE(r.is_ok()) << "parsed: " << text;
  return r.is_ok() ? std::string() : r.status().message();
}

TEST(GbnfParser, BuildsRulesAndExpressions) {
  auto r = parse_gbnf(R"(# a comment line
root ::= item ("," item)* # trailing comment
item ::= [a-z]+ | "<" [^>]{1,3} ">" |
         .?
)");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Grammar& g = r.value();
  ASSERT_EQ(g.rules.size(), 2u);
  EXPECT_EQ(g.rules[g.root].name, "root");
  const Expr& root = g.rules[g.root].body;
  ASSERT_EQ(root.kind, Expr::Kind::kSequence);
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.children[0].kind, Expr::Kind::kRuleRef);
  EXPECT_EQ(root.children[1].kind, Expr::Kind::kRepeat);
  EXPECT_EQ(root.children[1].min, 0);
  EXPECT_EQ(root.children[1].max, kUnbounded);
  const Expr& item = g.rules[g.find("item")].body;
  ASSERT_EQ(item.kind, Expr::Kind::kAlternation);
  ASSERT_EQ(item.children.size(), 3u);  // the third alternative is on the next line
  const Expr& bracketed = item.children[1];
  ASSERT_EQ(bracketed.kind, Expr::Kind::kSequence);
  const Expr& inner = bracketed.children[1];
  ASSERT_EQ(inner.kind, Expr::Kind::kRepeat);
  EXPECT_EQ(inner.min, 1);
  EXPECT_EQ(inner.max, 3);
  ASSERT_EQ(inner.children[0].kind, Expr::Kind::kCharClass);
  const std::vector<CodepointRange> not_gt = {{0, '>' - 1}, {'>' + 1, 0xD7FF}, {0xE000, kMaxCodepoint}};
  EXPECT_EQ(inner.children[0].ranges, not_gt);
}

TEST(GbnfParser, EscapesAndTokens) {
  auto r = parse_gbnf(R"(root ::= "\x41\u00E9\U0001F600\n\"" [\[\]\-\\] <"<|python_tag|>">)");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Expr& root = r.value().rules[0].body;
  ASSERT_EQ(root.children.size(), 3u);
  EXPECT_EQ(root.children[0].text, "A\xC3\xA9\xF0\x9F\x98\x80\n\"");
  const std::vector<CodepointRange> cls = {{'-', '-'}, {'[', ']'}};  // '[' '\\' ']' merge into one range
  EXPECT_EQ(root.children[1].ranges, cls);
  EXPECT_EQ(root.children[2].kind, Expr::Kind::kToken);
  EXPECT_EQ(root.children[2].text, "<|python_tag|>");
}

TEST(GbnfParser, ErrorsNameTheLineAndColumn) {
  EXPECT_EQ(gbnf_error_of("root ::= \"abc"), "gbnf line 1, column 10: unterminated string");
  EXPECT_EQ(gbnf_error_of("root ::= foo"), "gbnf line 1, column 10: rule 'foo' is not defined");
  EXPECT_EQ(gbnf_error_of("a ::= \"x\""), "gbnf: no rule named 'root' (the start rule)");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\"\nroot ::= \"b\""),
            "gbnf line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(gbnf_error_of("root ::= (\"a\""),
            "gbnf line 1, column 14: expected ')' to close the group, found end of input");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\")"), "gbnf line 1, column 13: unmatched ')'");
  EXPECT_EQ(gbnf_error_of("root ::= \"\\q\""), "gbnf line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(gbnf_error_of("root ::= [z-a]"),
            "gbnf line 1, column 11: character range is reversed (its end comes before its start)");
  EXPECT_EQ(gbnf_error_of("root ::= [abc"), "gbnf line 1, column 10: unterminated character class");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\"{3,2}"), "gbnf line 1, column 13: repetition {3,2} has max < min");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\"{1,x}"),
            "gbnf line 1, column 16: expected a number in '{m,n}', found 'x'");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\"{99999}"),
            "gbnf line 1, column 14: repetition count above the limit of 10000");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\" b ::= \"c\""),
            "gbnf line 1, column 14: rule 'b' starts before the previous rule ended (missing newline?)");
  EXPECT_EQ(gbnf_error_of("root := \"a\""), "gbnf line 1, column 6: expected '::=' after rule name 'root'");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\" @"), "gbnf line 1, column 14: unexpected '@'");
  EXPECT_EQ(gbnf_error_of("root ::= <abc>"),
            "gbnf line 1, column 11: expected '\"' after '<' (a token is written <\"text\">)");
  EXPECT_EQ(gbnf_error_of("root ::= \"\\uD800\""),
            "gbnf line 1, column 11: escape names U+D800, which is not a Unicode scalar value");
  EXPECT_EQ(gbnf_error_of("root ::= \"a\"\n\n  x ::= y"), "gbnf line 3, column 9: rule 'y' is not defined");
  EXPECT_EQ(gbnf_error_of("::= \"a\""), "gbnf line 1, column 1: expected a rule name, found ':'");
  EXPECT_EQ(gbnf_error_of("root ::= \"\xFF\""), "gbnf line 1, column 11: invalid UTF-8 in the grammar text");
}

// Random edits of good grammars: every result parses or fails with a
// positioned error; what parses compiles or fails with a Status; nothing
// crashes (this suite also runs under ASan/UBSan).
// `levels` groups (each opened by `open`) around `core`.
std::string nested_groups(int levels, std::string_view open = "(", std::string_view core = "a") {
  std::string text;
  for (int i = 0; i < levels; ++i) text += open;
  return text + std::string(core) + std::string(static_cast<size_t>(levels), ')');
}

TEST(GbnfParser, NestingPastTheLimitIsRefusedWhereItStarts) {
  // Every later stage walks an expression recursively: 64 KiB of '(' would
  // overflow a thread's stack, so the parser stops at kMaxNesting.
  const auto quoted = [](int levels) { return "root ::= " + nested_groups(levels, "(", "\"a\""); };
  ASSERT_TRUE(parse_gbnf(quoted(kMaxNesting)).is_ok());
  std::string err = gbnf_error_of(quoted(kMaxNesting + 1));
  EXPECT_NE(err.find("gbnf line 1, column 266: groups and repetitions nest more than 256 deep"),
            std::string::npos)
      << err;
  err = gbnf_error_of(quoted(30000));
  EXPECT_NE(err.find("nest more than 256 deep"), std::string::npos) << err;
  // Repetition operators wrap their element one level each.
  EXPECT_TRUE(parse_gbnf("root ::= \"a\"" + std::string(kMaxNesting, '?')).is_ok());
  err = gbnf_error_of("root ::= \"a\"" + std::string(60000, '?'));
  EXPECT_NE(err.find("nest more than 256 deep"), std::string::npos) << err;
  // A long chain of named rules is no nesting at all.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 3000; ++i)
    chain += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string(i + 1) + "\n";
  chain += "r3000 ::= \"a\"\n";
  EXPECT_TRUE(parse_gbnf(chain).is_ok());
}

TEST(RegexToGbnf, GroupsNestedPastTheLimitAreRefusedAndTheMessageStaysShort) {
  EXPECT_TRUE(regex_to_gbnf(nested_groups(kMaxNesting)).is_ok());
  EXPECT_TRUE(regex_to_gbnf(nested_groups(kMaxNesting, "(?:")).is_ok());
  for (const int levels : {kMaxNesting + 1, 200000}) {
    const auto r = regex_to_gbnf(nested_groups(levels));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find("groups nested more than 256 deep are not supported"), std::string::npos) << msg;
    // The pattern is quoted by its first 80 bytes and its length.
    EXPECT_NE(
        msg.find("pattern '" + std::string(80, '(') + "...' (" + std::to_string(2 * levels + 1) + " bytes)"),
        std::string::npos)
        << msg.substr(0, 200);
    EXPECT_LT(msg.size(), 300u);
  }
}

TEST(GbnfParser, SurvivesRandomEdits) {
  const std::vector<std::string> seeds = {
      "root ::= item (\",\" item)*\nitem ::= [a-z]+ | \"<\" [^>]{1,3} \">\" | .?",
      "root ::= \"(\" root \")\" root | \"\"",
      "root ::= x x\nx ::= \"a\" | \"aa\" | \"\"\n# comment\ny ::= <\"<ctl>\"> [\\u0400-\\u04FF]{2,}",
  };
  const std::string alphabet = "\"[]()|*+?{},.:=<>^-\\ \nabxyz019";
  auto vocab = testing::byte_vocabulary();
  std::mt19937_64 rng(3);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = seeds[rng() % seeds.size()];
    for (int e = 0, n = 1 + static_cast<int>(rng() % 4); e < n; ++e) {
      const size_t pos = rng() % (text.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          if (pos < text.size()) text.erase(pos, 1);
          break;
        case 1: text.insert(pos, 1, c); break;
        default:
          if (pos < text.size()) text[pos] = c;
          break;
      }
    }
    auto g = parse_gbnf(text);
    if (!g.is_ok()) {
      EXPECT_EQ(g.status().message().rfind("gbnf", 0), 0u) << g.status().message();
      continue;
    }
    ++parsed;
    auto compiled = CompiledGrammar::compile(g.value(), vocab);
    if (compiled.is_ok()) {
      GrammarMatcher m(compiled.value());
      std::vector<uint64_t> mask(vocab->mask_words());
      m.fill_mask(mask);
      m.accept_bytes("(ax");
    }
  }
  EXPECT_GT(parsed, 300);
}

}  // namespace
}  // namespace ladder::grammar
