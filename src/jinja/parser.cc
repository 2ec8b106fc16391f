#include "jinja/parser.h"

#include <initializer_list>
#include <string>

#include "jinja/expression_parser.h"
#include "jinja/lexer.h"
#include "jinja/scopes.h"

namespace ladder::jinja {
namespace {

// Fails the enclosing function with a parse error at the current token.
#define PARSE_FAIL(msg) return error_here(msg)

class Parser : public ExpressionParser {
 public:
  explicit Parser(std::vector<Token> tokens) : ExpressionParser(std::move(tokens)) {}

  Result<TemplateAst> run() {
    TemplateAst ast;
    std::string stop;
    LADDER_RETURN_IF_ERROR(parse_body(ast.body, {}, &stop));
    return ast;
  }

 private:
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
        LADDER_ASSIGN_OR_RETURN(n->expr, parse_tuple());
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
      LADDER_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(/*with_condexpr=*/false));
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
    LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple(/*with_condexpr=*/false));
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
      LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple());
      return expect_block_end();
    }
    LADDER_RETURN_IF_ERROR(parse_assign_targets(n));
    if (accept_op("=")) {
      n.kind = NodeKind::kSet;
      LADDER_ASSIGN_OR_RETURN(n.expr, parse_tuple());
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

  int loop_depth_ = 0;  // enclosing for loops, for break / continue
};

}  // namespace

Result<TemplateAst> parse_template(const std::string& source) {
  LADDER_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  LADDER_ASSIGN_OR_RETURN(TemplateAst ast, Parser(std::move(tokens)).run());
  analyze_scopes(ast);
  return ast;
}

}  // namespace ladder::jinja
