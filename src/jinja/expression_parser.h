// ExpressionParser: the token cursor and jinja2's expression grammar (with
// its precedence: or < and < not < comparisons < + - < ~ < * / // % < ** <
// unary, filters and `is` tests binding to the unary operand). The statement
// parser (parser.cc) builds on it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "common/status.h"
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace ladder::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

 protected:
  // ---- token helpers -------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::kOperator && cur().value == op; }
  bool is_name(const char* name) const { return cur().type == TokenType::kName && cur().value == name; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  Status error_here(const std::string& msg) const {
    return invalid_argument("template line " + std::to_string(cur().line) + ": " + msg);
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::kEof: return "end of template";
      case TokenType::kBlockEnd: return "'%}'";
      case TokenType::kVarEnd: return "'}}'";
      case TokenType::kData: return "template text";
      default: return "'" + t.value + "'";
    }
  }
  Status expect_op(const char* op) {
    if (accept_op(op)) return Status::ok();
    return error_here(std::string("expected '") + op + "', got " + describe(cur()));
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      next();
      return Status::ok();
    }
    return error_here("expected end of statement block '%}', got " + describe(cur()));
  }
  Result<std::string> expect_identifier(const char* what) {
    if (cur().type != TokenType::kName) return error_here(std::string("expected ") + what + ", got " + describe(cur()));
    std::string n = cur().value;
    next();
    return n;
  }

  // Records the subtree height and refuses trees deeper than kMaxNesting, so
  // that evaluating (and destroying) an expression cannot exhaust the stack;
  // `a + a + ... + a` builds depth without parser recursion.
  Result<ExprPtr> sealed(ExprPtr e) {
    int h = 0;
    for (const ExprPtr& c : e->children) {
      if (c) h = std::max(h, c->height);
    }
    for (const auto& kv : e->kwargs) h = std::max(h, kv.second->height);
    e->height = h + 1;
    if (e->height > kMaxNesting) {
      return invalid_argument("template line " + std::to_string(e->line) + ": expression nested deeper than " +
                              std::to_string(kMaxNesting) + " levels");
    }
    return e;
  }

  ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- expressions -----------------------------------------------------------
  Result<ExprPtr> parse_tuple(bool with_condexpr = true);
  bool is_tuple_end() const;
  Result<ExprPtr> parse_primary_postfix();
  Result<ExprPtr> parse_expression();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> binary(ExprPtr left, ExprPtr right, const std::string& op, int line);
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Status parse_call_args(Expr& call);
  Result<ExprPtr> parse_postfix(ExprPtr e);
  Result<ExprPtr> parse_subscript(ExprPtr obj, int line);
  Result<ExprPtr> parse_one_filter(ExprPtr value);
  Result<ExprPtr> parse_filter_chain(ExprPtr value);
  Result<ExprPtr> parse_filter_expr(ExprPtr e);
  Result<ExprPtr> parse_test(ExprPtr value);

  // Recursion depth of nested statements / expressions, bounded so that a
  // hostile template gets an error instead of exhausting the stack.
  static constexpr int kMaxNesting = 200;
  struct DepthGuard {
    explicit DepthGuard(ExpressionParser& p) : parser(p) { ++parser.depth_; }
    ~DepthGuard() { --parser.depth_; }
    ExpressionParser& parser;
  };
  int depth_ = 0;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  bool soft_ = false;  // inside an if / conditional expression: unknown filters fail only when run
};

}  // namespace ladder::jinja
