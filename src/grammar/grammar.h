// Grammar: a context-free grammar over UTF-8 text in GBNF notation (the
// notation llama.cpp uses), as a tree of expressions per rule. parse_gbnf()
// reads the text; grammar_fsm.h compiles it for matching.
//
// Notation (one rule per line; a line may continue after `|` or inside
// parentheses; `#` starts a comment):
//   name ::= alternatives         rule names are [A-Za-z0-9_-]+; `root` starts
//   "text"                        literal (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH ...)
//   [a-z0-9_] [^"\\] [\u0400-\u04FF]   character classes of code points, negation with ^
//   .                             any character (any Unicode scalar value)
//   ( ... )                       grouping; `|` separates alternatives
//   x? x* x+ x{m} x{m,} x{m,n}    repetition
//   <"[TOOL_CALLS]">              one vocabulary token named by its text, matched
//                                 as a unit (special tokens a model emits as markers)
// Terminals are Unicode code points written as UTF-8: a class never matches a
// partial or invalid UTF-8 sequence, and \xHH is the code point U+00HH.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ladder::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;
inline constexpr int32_t kUnbounded = -1;
// How deep groups and repetitions may nest inside one another in one rule
// (GBNF) or one pattern (regular expressions). An Expr is a tree that every
// later stage walks recursively, so the parsers refuse deeper text: 64 KiB of
// '(' would otherwise overflow a thread's stack. Grammars written by hand or
// generated from schemas nest a few levels.
inline constexpr int kMaxNesting = 256;

struct CodepointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;  // inclusive
  bool operator==(const CodepointRange&) const = default;
};

// Sorted, merged ranges of Unicode scalar values (no surrogates).
std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges);
// Every scalar value not in `ranges` (which must be normalized).
std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges);

struct Expr {
  enum class Kind {
    kLiteral,      // text: the UTF-8 bytes to match
    kCharClass,    // ranges: one code point from these (normalized)
    kRuleRef,      // rule: index into Grammar::rules
    kToken,        // text: the text of one vocabulary token
    kSequence,     // children in order (empty: matches "")
    kAlternation,  // one of children
    kRepeat,       // children[0] between min and max times (max may be kUnbounded)
  };
  Kind kind = Kind::kSequence;
  std::string text;
  std::vector<CodepointRange> ranges;
  int32_t rule = -1;
  int32_t min = 0;
  int32_t max = 0;
  std::vector<Expr> children;

  static Expr literal(std::string bytes);
  static Expr char_class(std::vector<CodepointRange> ranges);  // normalizes
  static Expr rule_ref(int32_t rule);
  static Expr token(std::string text);
  static Expr sequence(std::vector<Expr> parts);
  static Expr alternation(std::vector<Expr> alternatives);
  static Expr repeat(Expr body, int32_t min, int32_t max);
};

struct Rule {
  std::string name;
  Expr body;
};

struct Grammar {
  std::vector<Rule> rules;
  int32_t root = -1;

  // Index of the rule called `name`, or -1.
  int32_t find(std::string_view name) const;
};

// Limits that keep a grammar from a request bounded.
inline constexpr int32_t kMaxRepeatCount = 10000;  // m and n of {m,n}

// Parses GBNF text. Errors (kInvalidArgument) read "gbnf line L, column C:
// what is wrong": a syntax error, an undefined rule, a rule defined twice, a
// bad escape or range, a missing root rule.
Result<Grammar> parse_gbnf(std::string_view text, std::string_view root_name = "root");

}  // namespace ladder::grammar
