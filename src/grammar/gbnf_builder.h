// GbnfBuilder: writes GBNF text (grammar.h) from generated rules, for the
// JSON Schema and tool-call converters. Generated grammars are text so that
// they can be logged, read and reparsed like a hand-written one.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace ladder::grammar {

class GbnfBuilder {
 public:
  // Defines a rule under a fresh name made from `hint` (characters outside
  // [A-Za-z0-9-] become '-'; a numeric suffix keeps names unique).
  std::string add_rule(std::string_view hint, std::string body);
  // A fresh name to define later (a rule that refers to itself).
  std::string reserve(std::string_view hint);
  void define(const std::string& name, std::string body);
  // A rule shared by every user under exactly `name`: defined on first use.
  std::string shared_rule(const std::string& name, std::string_view body);
  bool has_rule(const std::string& name) const { return rules_.count(name) != 0; }

  // The grammar: `root ::= root_body` first, then the rules in name order.
  std::string text(std::string_view root_body) const;

  // "bytes" with the escapes GBNF needs.
  static std::string literal(std::string_view bytes);
  // "( a | b | ... )", or the one alternative alone.
  static std::string alternation(const std::vector<std::string>& alternatives);
  // [ranges] (ranges normalized); "" for an empty set.
  static std::string char_class(const std::vector<CodepointRange>& ranges);

 private:
  std::map<std::string, std::string> rules_;  // name -> body ("" while reserved)
};

}  // namespace ladder::grammar
