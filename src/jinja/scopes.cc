#include "jinja/scopes.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace ladder::jinja {
namespace {

// One frame's symbol table under construction (jinja2's idtracking.Symbols).
struct Symbols {
  const Symbols* parent = nullptr;
  std::map<std::string, size_t> refs;  // name -> index into order
  FrameSymbols order;                  // (name, load kind) in definition order
  std::set<std::string> stores;

  bool owns(const std::string& name) const { return refs.count(name) > 0; }
  bool find_ref(const std::string& name) const { return owns(name) || (parent && parent->find_ref(name)); }

  void define(const std::string& name, LoadKind kind) {
    auto it = refs.find(name);
    if (it != refs.end()) {
      order[it->second].second = kind;
      return;
    }
    refs[name] = order.size();
    order.emplace_back(name, kind);
  }
  void set_kind(const std::string& name, LoadKind kind) { order[refs.at(name)].second = kind; }

  void load(const std::string& name) {
    if (!find_ref(name)) define(name, LoadKind::kResolve);
  }
  void store(const std::string& name) {
    stores.insert(name);
    if (owns(name)) return;
    define(name, parent && parent->find_ref(name) ? LoadKind::kAlias : LoadKind::kUndefined);
  }
  void declare_parameter(const std::string& name) {
    stores.insert(name);
    define(name, LoadKind::kParameter);
  }

  // After an if: a name first stored in any branch is initialised from the
  // outer frame (or the context), so a branch that does not store it still
  // sees a value.
  void branch_update(const std::vector<Symbols>& branches) {
    std::set<std::string> new_stores;
    for (const Symbols& b : branches) {
      for (const std::string& t : b.stores) {
        if (!stores.count(t)) new_stores.insert(t);
      }
    }
    for (const Symbols& b : branches) {
      for (const auto& [name, kind] : b.order) {
        if (!owns(name)) define(name, kind);
        else set_kind(name, kind);
      }
      stores.insert(b.stores.begin(), b.stores.end());
    }
    for (const std::string& name : new_stores) {
      set_kind(name, parent && parent->find_ref(name) ? LoadKind::kAlias : LoadKind::kResolve);
    }
  }
};

void visit_expr(const Expr* e, Symbols& sym) {
  if (!e) return;
  if (e->kind == ExprKind::kName) {
    sym.load(e->name);
    return;
  }
  for (const ExprPtr& c : e->children) visit_expr(c.get(), sym);
  for (const auto& kv : e->kwargs) visit_expr(kv.second.get(), sym);
}

void analyze_frame_body(const Body& body, Symbols& sym);

// Visits a node as a statement of the frame `sym` (jinja2's FrameSymbolVisitor):
// nested frames contribute only what is evaluated in the outer frame.
void visit_node(Node& n, Symbols& sym);

// jinja2 parses `if a / elif b / elif c / else` as If(a, elif_=[If(b), If(c)],
// else_) and analyses three branches: the body, the elif list (each elif an
// If with empty elif/else of its own), and the else body.
void visit_branches(Symbols& sym, const std::vector<std::function<void(Symbols&)>>& fills) {
  std::vector<Symbols> branches;
  for (const auto& fill : fills) {
    branches.push_back(sym);
    fill(branches.back());
  }
  sym.branch_update(branches);
}

void visit_if(Node& n, Symbols& sym) {
  visit_expr(n.conditions[0].get(), sym);
  visit_branches(sym, {
                          [&](Symbols& b) { analyze_frame_body(n.bodies[0], b); },
                          [&](Symbols& b) {
                            for (size_t i = 1; i < n.conditions.size(); ++i) {
                              visit_expr(n.conditions[i].get(), b);
                              visit_branches(b, {[&](Symbols& bb) { analyze_frame_body(n.bodies[i], bb); },
                                                 [](Symbols&) {}, [](Symbols&) {}});
                            }
                          },
                          [&](Symbols& b) { analyze_frame_body(n.else_body, b); },
                      });
}

// A nested frame: params first, then the body, with `parent` as the outer table.
FrameSymbols analyze_nested(const Symbols& parent, const std::vector<std::string>& params, const Body* body,
                            const std::vector<const Expr*>& extra_loads) {
  Symbols inner;
  inner.parent = &parent;
  for (const std::string& p : params) inner.declare_parameter(p);
  for (const Expr* e : extra_loads) visit_expr(e, inner);
  if (body) analyze_frame_body(*body, inner);
  return inner.order;
}

bool expr_mentions(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const ExprPtr& c : e->children) {
    if (expr_mentions(c.get(), name)) return true;
  }
  for (const auto& kv : e->kwargs) {
    if (expr_mentions(kv.second.get(), name)) return true;
  }
  return false;
}

// Whether any expression in `body` (nested blocks included) reads `name`.
bool body_mentions(const Body& body, const std::string& name) {
  for (const NodePtr& n : body) {
    if (expr_mentions(n->expr.get(), name) || expr_mentions(n->filter.get(), name)) return true;
    for (const ExprPtr& c : n->conditions) {
      if (expr_mentions(c.get(), name)) return true;
    }
    for (const MacroParam& p : n->params) {
      if (expr_mentions(p.default_value.get(), name)) return true;
    }
    for (const Body& b : n->bodies) {
      if (body_mentions(b, name)) return true;
    }
    if (body_mentions(n->body, name) || body_mentions(n->else_body, name)) return true;
  }
  return false;
}

void analyze_children(Node& n, const Symbols& sym) {
  switch (n.kind) {
    case NodeKind::kFor: {
      std::vector<std::string> params = n.targets;
      params.insert(params.begin(), "loop");
      n.symbols = analyze_nested(sym, params, &n.body, {});
      n.else_symbols = analyze_nested(sym, {}, &n.else_body, {});
      if (n.filter) n.test_symbols = analyze_nested(sym, n.targets, nullptr, {n.filter.get()});
      break;
    }
    case NodeKind::kMacro:
    case NodeKind::kCallBlock: {
      std::vector<std::string> params;
      std::vector<const Expr*> defaults;
      for (const MacroParam& p : n.params) {
        params.push_back(p.name);
        if (p.default_value) defaults.push_back(p.default_value.get());
      }
      params.push_back("caller");
      params.push_back("varargs");
      params.push_back("kwargs");
      n.symbols = analyze_nested(sym, params, &n.body, defaults);
      n.uses_varargs = body_mentions(n.body, "varargs");
      n.uses_kwargs = body_mentions(n.body, "kwargs");
      n.uses_caller = body_mentions(n.body, "caller");
      break;
    }
    case NodeKind::kSetBlock:
    case NodeKind::kFilterBlock: n.symbols = analyze_nested(sym, {}, &n.body, {}); break;
    default: break;
  }
}

void visit_node(Node& n, Symbols& sym) {
  switch (n.kind) {
    case NodeKind::kText:
    case NodeKind::kBreak:
    case NodeKind::kContinue: break;
    case NodeKind::kPrint: visit_expr(n.expr.get(), sym); break;
    case NodeKind::kIf: visit_if(n, sym); break;
    case NodeKind::kFor: visit_expr(n.expr.get(), sym); break;
    case NodeKind::kSet:
      visit_expr(n.expr.get(), sym);
      if (!n.attr.empty()) {
        sym.load(n.targets[0]);  // `set ns.attr`: reads the namespace
      } else {
        for (const std::string& t : n.targets) sym.store(t);
      }
      break;
    case NodeKind::kSetBlock: sym.store(n.targets[0]); break;
    case NodeKind::kMacro: sym.store(n.name); break;
    case NodeKind::kCallBlock: visit_expr(n.expr.get(), sym); break;
    case NodeKind::kFilterBlock: visit_expr(n.filter.get(), sym); break;
  }
}

void analyze_frame_body(const Body& body, Symbols& sym) {
  for (const NodePtr& n : body) visit_node(*n, sym);
}

// Second pass: nested frames are analysed once their outer frame's table is
// complete (as jinja2 does when it compiles them), recursively.
void analyze_nested_frames(Body& body, const Symbols& sym);

void analyze_node_frames(Node& n, const Symbols& sym) {
  if (n.kind == NodeKind::kIf) {
    for (Body& b : n.bodies) analyze_nested_frames(b, sym);
    analyze_nested_frames(n.else_body, sym);
    return;
  }
  analyze_children(n, sym);
  auto recurse = [&](Body& body, const FrameSymbols& own, const std::vector<std::string>& params) {
    Symbols inner;
    inner.parent = &sym;
    for (const std::string& p : params) inner.declare_parameter(p);
    for (const auto& [name, kind] : own) inner.define(name, kind);
    analyze_nested_frames(body, inner);
  };
  switch (n.kind) {
    case NodeKind::kFor:
      recurse(n.body, n.symbols, {});
      recurse(n.else_body, n.else_symbols, {});
      break;
    case NodeKind::kMacro:
    case NodeKind::kCallBlock:
    case NodeKind::kSetBlock:
    case NodeKind::kFilterBlock: recurse(n.body, n.symbols, {}); break;
    default: break;
  }
}

void analyze_nested_frames(Body& body, const Symbols& sym) {
  for (NodePtr& n : body) analyze_node_frames(*n, sym);
}

}  // namespace

void analyze_scopes(TemplateAst& ast) {
  Symbols root;
  analyze_frame_body(ast.body, root);
  ast.symbols = root.order;
  analyze_nested_frames(ast.body, root);
}

}  // namespace ladder::jinja
