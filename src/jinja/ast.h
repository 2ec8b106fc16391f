// The template's syntax tree. Expressions and statements each carry the line
// they start on, so a render error can name where it happened.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace ladder::jinja {

struct Expr;
struct Node;
using ExprPtr = std::unique_ptr<Expr>;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class ExprKind {
  kLiteral,     // literal
  kName,        // name
  kList,        // children: items
  kTuple,       // children: items
  kDict,        // children: k0, v0, k1, v1, ...
  kAttr,        // children[0] . name
  kItem,        // children[0] [ children[1] ]
  kSlice,       // children[0] [ c1 : c2 : c3 ]  (null children = omitted)
  kCall,        // children[0] ( children[1..] , kwargs )
  kFilter,      // children[0] | name ( children[1..], kwargs ); children[0] null in a filter block
  kTest,        // children[0] is [not] name ( children[1..] )
  kUnary,       // name: "-", "+", "not"; children[0]
  kBinary,      // name: operator; children[0], children[1]
  kAnd,
  kOr,
  kCompare,     // children[0] ops[i] children[i+1] ...
  kCondition,   // children: [value, test, else-value or null]
  kBlockValue,  // the captured text of a {% filter %} / {% set %} block
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;  // `is not`
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare
  int height = 1;                 // of this subtree; bounded by the parser
};

enum class NodeKind {
  kText,         // text
  kPrint,        // expr
  kIf,           // conditions[i] -> bodies[i]; else_body
  kFor,          // targets in expr [if filter]: body; else_body
  kSet,          // targets = expr, or (ns_attr) target.attr = expr
  kSetBlock,     // targets[0] = rendered body piped through filter (may be null)
  kMacro,        // name(params): body
  kCallBlock,    // call expr with caller(params): body
  kFilterBlock,  // body piped through filter
  kBreak,
  kContinue,
};

// How a frame's own variable gets its value when the frame is entered
// (jinja2's idtracking): a parameter (set by the caller), resolved from the
// context, copied from the enclosing frame's variable, or left undefined.
enum class LoadKind { kParameter, kResolve, kAlias, kUndefined };

// The variables a frame owns, in first-reference order. Reads of any other
// name go to the enclosing frames, then the context.
using FrameSymbols = std::vector<std::pair<std::string, LoadKind>>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;                 // kFor's `if`, or a block's filter chain
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::string> targets;  // assignment / loop names
  bool unpack = false;               // targets came from a tuple (`for k, v in ...`)
  std::string attr;                  // kSet on a namespace attribute
  std::string name;                  // kMacro
  std::vector<MacroParam> params;    // kMacro / kCallBlock

  // Filled by analyze_scopes(): the frames this node opens.
  FrameSymbols symbols;       // loop / macro / call / set-block / filter-block body
  FrameSymbols else_symbols;  // kFor's else
  FrameSymbols test_symbols;  // kFor's `if` filter
  // kMacro / kCallBlock: whether the body mentions these special names, which
  // decides (as in jinja2) whether extra arguments or a caller are accepted.
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

// A parsed template owns its tree; macros point into it.
struct TemplateAst {
  Body body;
  FrameSymbols symbols;  // the root frame
};

}  // namespace ladder::jinja
