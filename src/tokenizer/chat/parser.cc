#include "tokenizer/chat/parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <set>

#include "tokenizer/chat/builtins.h"
#include "tokenizer/chat/lexer.h"
#include "tokenizer/chat/scopes.h"

namespace ladder::chat {
namespace {

// Fails the enclosing function with a parse error at the current token.
#define PARSE_FAIL(msg) return error_here(msg)

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Result<TemplateAst> run() {
    TemplateAst ast;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(ast.body, {}, &stop));
    return ast;
  }

 private:
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
    PARSE_FAIL(std::string("expected '") + op + "', got " + describe(cur()));
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      next();
      return Status::ok();
    }
    PARSE_FAIL("expected end of statement block '%}', got " + describe(cur()));
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

  // ---- statements ----------------------------------------------------------
  // Parses nodes until a block tag named in `stops`; leaves the position after
  // that tag's name and reports it in *stop. With no stops, runs to the end.
  Status parse_body(Body& body, std::initializer_list<const char*> stops, std::string* stop) {
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEof) {
        if (stops.size() == 0) return Status::ok();
        std::string want;
        for (const char* s : stops) want += (want.empty() ? "" : " or ") + std::string("'") + s + "'";
        PARSE_FAIL("unexpected end of template: the block is not closed, expected " + want);
      }
      if (t.type == TokenType::kData) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kText;
        n->line = t.line;
        n->text = t.value;
        body.push_back(std::move(n));
        next();
        continue;
      }
      if (t.type == TokenType::kVarBegin) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kPrint;
        n->line = t.line;
        next();
        LADDER_ASSIGN_OR_RETURN(n->expr, parse_tuple(false));
        if (cur().type != TokenType::kVarEnd) PARSE_FAIL("expected end of print statement '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(n));
        continue;
      }
      if (t.type != TokenType::kBlockBegin) PARSE_FAIL("unexpected " + describe(t));
      next();
      if (cur().type != TokenType::kName) PARSE_FAIL("expected a statement name after '{%', got " + describe(cur()));
      std::string tag = cur().value;
      for (const char* s : stops) {
        if (tag == s) {
          next();
          *stop = tag;
          return Status::ok();
        }
      }
      LADDER_RETURN_IF_ERROR(parse_statement(body));
    }
  }

  Status parse_statement(Body& body) {
    DepthGuard guard(*this);
    if (depth_ > kMaxNesting) PARSE_FAIL("statements nested deeper than " + std::to_string(kMaxNesting) + " levels");
    std::string tag = cur().value;
    int line = cur().line;
    next();
    auto n = std::make_unique<Node>();
    n->line = line;
    if (tag == "if") {
      LADDER_RETURN_IF_ERROR(parse_if(*n));
    } else if (tag == "for") {
      LADDER_RETURN_IF_ERROR(parse_for(*n));
    } else if (tag == "set") {
      LADDER_RETURN_IF_ERROR(parse_set(*n));
    } else if (tag == "macro") {
      LADDER_RETURN_IF_ERROR(parse_macro(*n));
    } else if (tag == "call") {
      LADDER_RETURN_IF_ERROR(parse_call_block(*n));
    } else if (tag == "filter") {
      LADDER_RETURN_IF_ERROR(parse_filter_block(*n));
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) return invalid_argument("template line " + std::to_string(line) + ": '" + tag + "' outside of a loop");
      n->kind = tag == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      LADDER_RETURN_IF_ERROR(expect_block_end());
    } else if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block" ||
               tag == "with" || tag == "autoescape" || tag == "do") {
      return unimplemented("template line " + std::to_string(line) + ": the '" + tag +
                           "' statement is not supported by Ladder's chat-template interpreter");
    } else {
      return invalid_argument("template line " + std::to_string(line) + ": encountered unknown tag '" + tag + "'");
    }
    body.push_back(std::move(n));
    return Status::ok();
  }

  Status parse_if(Node& n) {
    n.kind = NodeKind::kIf;
    bool saved_soft = soft_;
    soft_ = true;
    while (true) {
      // jinja2 parses an if-test without the inline `a if b else c` form.
      LADDER_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(false, /*with_condexpr=*/false));
      LADDER_RETURN_IF_ERROR(expect_block_end());
      n.conditions.push_back(std::move(cond));
      n.bodies.emplace_back();
      std::string stop;
      LADDER_RETURN_IF_ERROR(parse_body(n.bodies.back(), {"elif", "else", "endif"}, &stop));
      if (stop == "elif") continue;
      if (stop == "else") {
        LADDER_RETURN_IF_ERROR(expect_block_end());
        LADDER_RETURN_IF_ERROR(parse_body(n.else_body, {"endif"}, &stop));
      }
      LADDER_RETURN_IF_ERROR(expect_block_end());
      break;
    }
    soft_ = saved_soft;
    return Status::ok();
  }

  Status parse_assign_targets(Node& n) {
    // name | name, name, ... | (name, name)
    bool paren = accept_op("(");
    while (true) {
      LADDER_ASSIGN_OR_RETURN(std::string name, expect_identifier("a variable name"));
      n.targets.push_back(name);
      if (!accept_op(",")) break;
      n.unpack = true;
      if (cur().type != TokenType::kName) break;
    }
    if (paren) {
      n.unpack = true;
      LADDER_RETURN_IF_ERROR(expect_op(")"));
    }
    return Status::ok();
  }

  Status parse_for(Node& n) {
    n.kind = NodeKind::kFor;
    LADDER_RETURN_IF_ERROR(parse_assign_targets(n));
    if (!accept_name("in")) PARSE_FAIL("expected 'in' in a for loop, got " + describe(cur()));
    LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple(false, /*with_condexpr=*/false));
    bool saved_soft = soft_;
    soft_ = false;
    if (accept_name("if")) {
      LADDER_ASSIGN_OR_RETURN(n.filter, parse_expression());
    }
    if (accept_name("recursive")) {
      return unimplemented("template line " + std::to_string(n.line) + ": recursive for loops are not supported");
    }
    LADDER_RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(n.body, {"else", "endfor"}, &stop));
    --loop_depth_;
    if (stop == "else") {
      LADDER_RETURN_IF_ERROR(expect_block_end());
      LADDER_RETURN_IF_ERROR(parse_body(n.else_body, {"endfor"}, &stop));
    }
    soft_ = saved_soft;
    return expect_block_end();
  }

  Status parse_set(Node& n) {
    // set ns.attr = expr | set a, b = expr | set x = expr | set x [| filter] %}...{% endset
    if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == ".") {
      n.kind = NodeKind::kSet;
      n.targets.push_back(cur().value);
      next();
      next();
      LADDER_ASSIGN_OR_RETURN(n.attr, expect_identifier("an attribute name"));
      LADDER_RETURN_IF_ERROR(expect_op("="));
      LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple(false));
      return expect_block_end();
    }
    LADDER_RETURN_IF_ERROR(parse_assign_targets(n));
    if (accept_op("=")) {
      n.kind = NodeKind::kSet;
      LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple(false));
      return expect_block_end();
    }
    if (n.unpack || n.targets.size() != 1) PARSE_FAIL("a block {% set %} assigns exactly one name");
    n.kind = NodeKind::kSetBlock;
    if (is_op("|")) {
      LADDER_ASSIGN_OR_RETURN(n.filter, parse_filter_chain(make(ExprKind::kBlockValue, cur().line)));
    }
    LADDER_RETURN_IF_ERROR(expect_block_end());
    bool saved_soft = soft_;
    soft_ = false;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(n.body, {"endset"}, &stop));
    soft_ = saved_soft;
    return expect_block_end();
  }

  Status parse_params(std::vector<MacroParam>& params) {
    LADDER_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (!params.empty()) LADDER_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
      MacroParam p;
      LADDER_ASSIGN_OR_RETURN(p.name, expect_identifier("a parameter name"));
      if (accept_op("=")) {
        LADDER_ASSIGN_OR_RETURN(p.default_value, parse_expression());
      } else if (!params.empty() && params.back().default_value) {
        PARSE_FAIL("non-default argument '" + p.name + "' follows default argument");
      }
      params.push_back(std::move(p));
    }
    next();
    return Status::ok();
  }

  Status parse_macro(Node& n) {
    n.kind = NodeKind::kMacro;
    LADDER_ASSIGN_OR_RETURN(n.name, expect_identifier("a macro name"));
    LADDER_RETURN_IF_ERROR(parse_params(n.params));
    LADDER_RETURN_IF_ERROR(expect_block_end());
    bool saved_soft = soft_;
    int saved_loops = loop_depth_;
    soft_ = false;
    loop_depth_ = 0;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(n.body, {"endmacro"}, &stop));
    soft_ = saved_soft;
    loop_depth_ = saved_loops;
    return expect_block_end();
  }

  Status parse_call_block(Node& n) {
    n.kind = NodeKind::kCallBlock;
    if (is_op("(")) LADDER_RETURN_IF_ERROR(parse_params(n.params));
    LADDER_ASSIGN_OR_RETURN(n.expr, parse_expression());
    if (n.expr->kind != ExprKind::kCall) {
      return invalid_argument("template line " + std::to_string(n.line) + ": {% call %} expects a call expression");
    }
    LADDER_RETURN_IF_ERROR(expect_block_end());
    bool saved_soft = soft_;
    soft_ = false;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(n.body, {"endcall"}, &stop));
    soft_ = saved_soft;
    return expect_block_end();
  }

  Status parse_filter_block(Node& n) {
    n.kind = NodeKind::kFilterBlock;
    // `{% filter trim | upper %}`: the first filter has no leading '|'.
    ExprPtr value = make(ExprKind::kBlockValue, cur().line);
    LADDER_ASSIGN_OR_RETURN(value, parse_one_filter(std::move(value)));
    LADDER_ASSIGN_OR_RETURN(n.filter, parse_filter_chain(std::move(value)));
    LADDER_RETURN_IF_ERROR(expect_block_end());
    bool saved_soft = soft_;
    soft_ = false;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(n.body, {"endfilter"}, &stop));
    soft_ = saved_soft;
    return expect_block_end();
  }

  // ---- expressions ---------------------------------------------------------
  // A comma-separated list becomes a tuple: `{{ a, b }}`, `for x in a, b`.
  Result<ExprPtr> parse_tuple(bool simplified, bool with_condexpr = true) {
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
      if (simplified) {
        LADDER_ASSIGN_OR_RETURN(e, parse_primary_postfix());
      } else if (with_condexpr) {
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

  bool is_tuple_end() const {
    const Token& t = cur();
    if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd || t.type == TokenType::kEof) return true;
    if (t.type == TokenType::kOperator && (t.value == ")" || t.value == "=")) return true;
    if (t.type == TokenType::kName && (t.value == "in" || t.value == "if" || t.value == "recursive")) return true;
    return false;
  }

  Result<ExprPtr> parse_primary_postfix() {
    LADDER_ASSIGN_OR_RETURN(ExprPtr e, parse_primary());
    return parse_postfix(std::move(e));
  }

  Result<ExprPtr> parse_expression() {
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

  Result<ExprPtr> parse_or() {
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

  Result<ExprPtr> parse_and() {
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

  Result<ExprPtr> parse_not() {
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

  Result<ExprPtr> parse_compare() {
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

  Result<ExprPtr> binary(ExprPtr left, ExprPtr right, const std::string& op, int line) {
    ExprPtr e = make(ExprKind::kBinary, line);
    e->name = op;
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return sealed(std::move(e));
  }

  Result<ExprPtr> parse_math1() {
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

  Result<ExprPtr> parse_concat() {
    LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (is_op("~")) {
      int line = cur().line;
      next();
      LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
      LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), "~", line));
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
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

  Result<ExprPtr> parse_pow() {
    LADDER_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      int line = cur().line;
      next();
      LADDER_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
      LADDER_ASSIGN_OR_RETURN(left, binary(std::move(left), std::move(right), "**", line));
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
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

  Result<ExprPtr> parse_primary() {
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
      LADDER_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple(false));
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

  Status parse_call_args(Expr& call) {
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

  Result<ExprPtr> parse_postfix(ExprPtr e) {
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

  Result<ExprPtr> parse_subscript(ExprPtr obj, int line) {
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

  Result<ExprPtr> parse_one_filter(ExprPtr value) {
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

  Result<ExprPtr> parse_filter_chain(ExprPtr value) {
    while (accept_op("|")) {
      LADDER_ASSIGN_OR_RETURN(value, parse_one_filter(std::move(value)));
    }
    return value;
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr e) {
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

  Result<ExprPtr> parse_test(ExprPtr value) {
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

  // Recursion depth of nested statements / expressions, bounded so that a
  // hostile template gets an error instead of exhausting the stack.
  static constexpr int kMaxNesting = 200;
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) { ++parser.depth_; }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };
  int depth_ = 0;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  bool soft_ = false;  // inside an if / conditional expression: unknown filters fail only when run
  int loop_depth_ = 0;
};

}  // namespace

Result<TemplateAst> parse_template(const std::string& source) {
  LADDER_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  LADDER_ASSIGN_OR_RETURN(TemplateAst ast, Parser(std::move(tokens)).run());
  analyze_scopes(ast);
  return ast;
}

}  // namespace ladder::chat
