#include "jinja/expression_parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "jinja/builtins.h"

namespace ladder::jinja {

// Fails the enclosing function with a parse error at the current token.
#define PARSE_FAIL(msg) return error_here(msg)

// A comma-separated list becomes a tuple: `{{ a, b }}`, `for x in a, b`.
Result<ExprPtr> ExpressionParser::parse_tuple(bool with_condexpr) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool saw_comma = false;
  while (true) {
    if (!items.empty()) {
      if (!accept_op(",")) break;
      saw_comma = true;
    }
    if (is_tuple_end()) break;
    ExprPtr e;
    if (with_condexpr) {
      LADDER_ASSIGN_OR_RETURN(e, parse_expression());
    } else {
      LADDER_ASSIGN_OR_RETURN(e, parse_or());
    }
    items.push_back(std::move(e));
  }
  if (items.empty()) PARSE_FAIL("expected an expression, got " + describe(cur()));
  if (!saw_comma) return std::move(items[0]);
  ExprPtr t = make(ExprKind::kTuple, line);
  t->children = std::move(items);
  return sealed(std::move(t));
}

bool ExpressionParser::is_tuple_end() const {
  const Token& t = cur();
  if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd || t.type == TokenType::kEof) return true;
  if (t.type == TokenType::kOperator && (t.value == ")" || t.value == "=")) return true;
  if (t.type == TokenType::kName && (t.value == "in" || t.value == "if" || t.value == "recursive")) return true;
  return false;
}

Result<ExprPtr> ExpressionParser::parse_primary_postfix() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr e, parse_primary());
  return parse_postfix(std::move(e));
}

Result<ExprPtr> ExpressionParser::parse_expression() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
  while (is_name("if")) {
    int line = cur().line;
    next();
    bool saved_soft = soft_;
    soft_ = true;
    LADDER_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
    ExprPtr otherwise;
    if (accept_name("else")) {
      LADDER_ASSIGN_OR_RETURN(otherwise, parse_expression());
    }
    soft_ = saved_soft;
    ExprPtr c = make(ExprKind::kCondition, line);
    c->children.push_back(std::move(value));
    c->children.push_back(std::move(test));
    c->children.push_back(std::move(otherwise));
    LADDER_ASSIGN_OR_RETURN(value, sealed(std::move(c)));
  }
  return value;
}

Result<ExprPtr> ExpressionParser::parse_or() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    ExprPtr e = make(ExprKind::kOr, line);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    LADDER_ASSIGN_OR_RETURN(left, sealed(std::move(e)));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_and() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    ExprPtr e = make(ExprKind::kAnd, line);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    LADDER_ASSIGN_OR_RETURN(left, sealed(std::move(e)));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this);
    if (depth_ > kMaxNesting) PARSE_FAIL("expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    ExprPtr e = make(ExprKind::kUnary, line);
    e->name = "not";
    e->children.push_back(std::move(operand));
    return sealed(std::move(e));
  }
  return parse_compare();
}

Result<ExprPtr> ExpressionParser::parse_compare() {
  int line = cur().line;
  LADDER_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Token& t = cur();
    if (t.type == TokenType::kOperator &&
        (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" || t.value == ">" || t.value == ">=")) {
      op = t.value;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
      op = "notin";
      next();
      next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::kCompare, line);
      cmp->children.push_back(std::move(first));
    }
    LADDER_ASSIGN_OR_RETURN(ExprPtr rhs, parse_math1());
    cmp->ops.push_back(op);
    cmp->children.push_back(std::move(rhs));
  }
  if (cmp) return sealed(std::move(cmp));
  return first;
}

Result<ExprPtr> ExpressionParser::binary(ExprPtr left, ExprPtr right, const std::string& op, int line) {
  ExprPtr e = make(ExprKind::kBinary, line);
  e->name = op;
  e->children.push_back(std::move(left));
  e->children.push_back(std::move(right));
  return sealed(std::move(e));
}

Result<ExprPtr> ExpressionParser::parse_math1() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (is_op("+") || is_op("-")) {
    std::string op = cur().value;
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), op, line));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_concat() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (is_op("~")) {
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), "~", line));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_math2() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = cur().value;
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), op, line));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_pow() {
  LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (is_op("**")) {
    int line = cur().line;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), "**", line));
  }
  return left;
}

Result<ExprPtr> ExpressionParser::parse_unary(bool with_filter) {
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    DepthGuard guard(*this);
    if (depth_ > kMaxNesting) PARSE_FAIL("expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
    int line = cur().line;
    std::string op = cur().value;
    next();
    LADDER_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    e = make(ExprKind::kUnary, line);
    e->name = op;
    e->children.push_back(std::move(operand));
    LADDER_ASSIGN_OR_RETURN(e, sealed(std::move(e)));
  } else {
    LADDER_ASSIGN_OR_RETURN(e, parse_primary());
  }
  LADDER_ASSIGN_OR_RETURN(e, parse_postfix(std::move(e)));
  if (with_filter) return parse_filter_expr(std::move(e));
  return e;
}

Result<ExprPtr> ExpressionParser::parse_primary() {
  DepthGuard guard(*this);
  if (depth_ > kMaxNesting) PARSE_FAIL("expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
  const Token& t = cur();
  int line = t.line;
  if (t.type == TokenType::kName) {
    static const std::set<std::string> kTrue = {"true", "True"}, kFalse = {"false", "False"}, kNone = {"none", "None"};
    ExprPtr e = make(ExprKind::kLiteral, line);
    if (kTrue.count(t.value)) {
      e->literal = Value(true);
    } else if (kFalse.count(t.value)) {
      e->literal = Value(false);
    } else if (kNone.count(t.value)) {
      e->literal = Value::none();
    } else {
      e->kind = ExprKind::kName;
      e->name = t.value;
    }
    next();
    return e;
  }
  if (t.type == TokenType::kString) {
    std::string s;
    while (cur().type == TokenType::kString) {  // adjacent literals concatenate
      s += cur().value;
      next();
    }
    ExprPtr e = make(ExprKind::kLiteral, line);
    e->literal = Value(std::move(s));
    return e;
  }
  if (t.type == TokenType::kInt) {
    int64_t v = 0;
    auto res = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
    if (res.ec != std::errc()) PARSE_FAIL("integer literal " + t.value + " is out of range");
    ExprPtr e = make(ExprKind::kLiteral, line);
    e->literal = Value(v);
    next();
    return e;
  }
  if (t.type == TokenType::kFloat) {
    ExprPtr e = make(ExprKind::kLiteral, line);
    e->literal = Value(std::strtod(t.value.c_str(), nullptr));
    next();
    return e;
  }
  if (is_op("(")) {
    next();
    if (accept_op(")")) {
      ExprPtr e = make(ExprKind::kTuple, line);
      return e;
    }
    LADDER_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple());
    LADDER_RETURN_IF_ERROR(expect_op(")"));
    return e;
  }
  if (is_op("[")) {
    next();
    ExprPtr e = make(ExprKind::kList, line);
    while (!is_op("]")) {
      if (!e->children.empty()) LADDER_RETURN_IF_ERROR(expect_op(","));
      if (is_op("]")) break;
      LADDER_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      e->children.push_back(std::move(item));
    }
    next();
    return sealed(std::move(e));
  }
  if (is_op("{")) {
    next();
    ExprPtr e = make(ExprKind::kDict, line);
    while (!is_op("}")) {
      if (!e->children.empty()) LADDER_RETURN_IF_ERROR(expect_op(","));
      if (is_op("}")) break;
      LADDER_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
      LADDER_RETURN_IF_ERROR(expect_op(":"));
      LADDER_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      e->children.push_back(std::move(key));
      e->children.push_back(std::move(value));
    }
    next();
    return sealed(std::move(e));
  }
  PARSE_FAIL("unexpected " + describe(t) + " in an expression");
}

Status ExpressionParser::parse_call_args(Expr& call) {
  // Positional args then keyword args: f(a, b, key=c).
  while (!is_op(")")) {
    if (call.children.size() > 1 || !call.kwargs.empty()) LADDER_RETURN_IF_ERROR(expect_op(","));
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) PARSE_FAIL("*args / **kwargs in calls are not supported");
    if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == "=") {
      std::string key = cur().value;
      next();
      next();
      LADDER_ASSIGN_OR_RETURN(ExprPtr v, parse_expression());
      call.kwargs.emplace_back(key, std::move(v));
    } else {
      if (!call.kwargs.empty()) PARSE_FAIL("positional argument follows keyword argument");
      LADDER_ASSIGN_OR_RETURN(ExprPtr v, parse_expression());
      call.children.push_back(std::move(v));
    }
  }
  next();
  return Status::ok();
}

Result<ExprPtr> ExpressionParser::parse_postfix(ExprPtr e) {
  while (true) {
    int line = cur().line;
    if (is_op(".")) {
      next();
      ExprPtr a;
      if (cur().type == TokenType::kName) {
        a = make(ExprKind::kAttr, line);
        a->name = cur().value;
      } else if (cur().type == TokenType::kInt) {
        a = make(ExprKind::kItem, line);
        ExprPtr idx = make(ExprKind::kLiteral, line);
        idx->literal = Value(static_cast<int64_t>(std::stoll(cur().value)));
        a->children.push_back(std::move(e));
        a->children.push_back(std::move(idx));
        next();
        LADDER_ASSIGN_OR_RETURN(e, sealed(std::move(a)));
        continue;
      } else {
        PARSE_FAIL("expected an attribute name after '.', got " + describe(cur()));
      }
      next();
      a->children.push_back(std::move(e));
      LADDER_ASSIGN_OR_RETURN(e, sealed(std::move(a)));
    } else if (is_op("[")) {
      next();
      LADDER_ASSIGN_OR_RETURN(e, parse_subscript(std::move(e), line));
    } else if (is_op("(")) {
      next();
      ExprPtr c = make(ExprKind::kCall, line);
      c->children.push_back(std::move(e));
      LADDER_RETURN_IF_ERROR(parse_call_args(*c));
      LADDER_ASSIGN_OR_RETURN(e, sealed(std::move(c)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> ExpressionParser::parse_subscript(ExprPtr obj, int line) {
  // obj[expr] or obj[a:b:c] (any part may be omitted).
  ExprPtr parts[3];
  int n_colons = 0;
  if (!is_op(":")) {
    LADDER_ASSIGN_OR_RETURN(parts[0], parse_expression());
  }
  while (is_op(":") && n_colons < 2) {
    next();
    ++n_colons;
    if (!is_op(":") && !is_op("]")) {
      LADDER_ASSIGN_OR_RETURN(parts[n_colons], parse_expression());
    }
  }
  LADDER_RETURN_IF_ERROR(expect_op("]"));
  ExprPtr e;
  if (n_colons == 0) {
    e = make(ExprKind::kItem, line);
    e->children.push_back(std::move(obj));
    e->children.push_back(std::move(parts[0]));
  } else {
    e = make(ExprKind::kSlice, line);
    e->children.push_back(std::move(obj));
    for (auto& p : parts) e->children.push_back(std::move(p));
  }
  return sealed(std::move(e));
}

Result<ExprPtr> ExpressionParser::parse_one_filter(ExprPtr value) {
  int line = cur().line;
  LADDER_ASSIGN_OR_RETURN(std::string name, expect_identifier("a filter name"));
  while (accept_op(".")) {  // dotted filter names
    LADDER_ASSIGN_OR_RETURN(std::string part, expect_identifier("a filter name"));
    name += "." + part;
  }
  if (!is_known_filter(name) && !soft_) {
    return invalid_argument("template line " + std::to_string(line) + ": no filter named '" + name + "'");
  }
  ExprPtr f = make(ExprKind::kFilter, line);
  f->name = name;
  f->children.push_back(std::move(value));
  if (accept_op("(")) LADDER_RETURN_IF_ERROR(parse_call_args(*f));
  return sealed(std::move(f));
}

Result<ExprPtr> ExpressionParser::parse_filter_chain(ExprPtr value) {
  while (accept_op("|")) {
    LADDER_ASSIGN_OR_RETURN(value, parse_one_filter(std::move(value)));
  }
  return value;
}

Result<ExprPtr> ExpressionParser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      LADDER_ASSIGN_OR_RETURN(e, parse_filter_chain(std::move(e)));
    } else if (is_name("is")) {
      LADDER_ASSIGN_OR_RETURN(e, parse_test(std::move(e)));
    } else if (is_op("(")) {
      LADDER_ASSIGN_OR_RETURN(e, parse_postfix(std::move(e)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> ExpressionParser::parse_test(ExprPtr value) {
  int line = cur().line;
  next();  // is
  bool negated = accept_name("not");
  LADDER_ASSIGN_OR_RETURN(std::string name, expect_identifier("a test name"));
  while (accept_op(".")) {
    LADDER_ASSIGN_OR_RETURN(std::string part, expect_identifier("a test name"));
    name += "." + part;
  }
  ExprPtr t = make(ExprKind::kTest, line);
  t->name = name;
  t->negated = negated;
  t->children.push_back(std::move(value));
  if (accept_op("(")) {
    LADDER_RETURN_IF_ERROR(parse_call_args(*t));
  } else {
    const Token& c = cur();
    bool arg_start = c.type == TokenType::kName || c.type == TokenType::kString || c.type == TokenType::kInt ||
                     c.type == TokenType::kFloat ||
                     (c.type == TokenType::kOperator && (c.value == "(" || c.value == "[" || c.value == "{"));
    if (arg_start && !(c.type == TokenType::kName && (c.value == "else" || c.value == "or" || c.value == "and"))) {
      if (is_name("is")) PARSE_FAIL("you cannot chain multiple tests with is");
      LADDER_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary_postfix());
      t->children.push_back(std::move(arg));
    }
  }
  if (!is_known_test(name) && !soft_) {
    return invalid_argument("template line " + std::to_string(line) + ": no test named '" + name + "'");
  }
  return sealed(std::move(t));
}

}  // namespace ladder::jinja
