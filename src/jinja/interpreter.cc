#include "jinja/interpreter.h"

#include <cstdint>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/globals.h"
#include "jinja/operations.h"
#include "jinja/scopes.h"

namespace ladder::jinja {
namespace {

constexpr const char* kLinePrefix = "template line ";

Status at_line(const Status& s, int line) {
  if (s.message().rfind(kLinePrefix, 0) == 0) return s;
  return Status(s.code(), kLinePrefix + std::to_string(line) + ": " + s.message());
}

// A frame's own variables: few per frame, so a flat vector beats a hash map.
struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;

  Value* find(const std::string& name) {
    for (auto& [k, v] : vars) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    if (Value* slot = find(name)) {
      *slot = std::move(v);
    } else {
      vars.emplace_back(name, std::move(v));
    }
  }
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  Interpreter(const Dict& context, const RenderOptions& options)
      : options_(options), stack_top_(reinterpret_cast<uintptr_t>(__builtin_frame_address(0))) {
    globals_ = make_globals(options.now);
    for (const auto& [k, v] : context.entries) {
      if (k.is_string()) context_[k.as_string()] = v;
    }
  }

  Result<Text> render(const TemplateAst& ast) {
    frame_ = nullptr;
    root_ = enter_frame(nullptr, ast.symbols);
    frame_ = root_;
    TextBuilder out;
    LADDER_ASSIGN_OR_RETURN(Flow flow, exec_body(ast.body, out));
    (void)flow;
    return out.take();
  }

 private:
  // ---- scopes --------------------------------------------------------------
  // A name's value: the nearest frame that owns it (scopes.h), else the
  // context as jinja2 resolves it (top-level assignments made so far, the
  // render context, the globals).
  Value lookup_from(const Frame* f, const std::string& name) const {
    for (; f; f = f->parent.get()) {
      if (const Value* v = const_cast<Frame*>(f)->find(name)) return *v;
    }
    return resolve(name);
  }
  Value lookup(const std::string& name) const { return lookup_from(frame_.get(), name); }

  Value resolve(const std::string& name) const {
    if (auto it = exported_.find(name); it != exported_.end()) return it->second;
    if (auto it = context_.find(name); it != context_.end()) return it->second;
    if (const Value* g = globals_.find(std::string_view(name))) return *g;
    return Value::undefined(name);
  }

  // Assignments go to the current frame; at top level they are also
  // exported to the context, where later frames resolve them.
  void assign(const std::string& name, Value v) {
    if (frame_ == root_) exported_[name] = v;
    frame_->set(name, std::move(v));
  }

  // A new frame below `parent`, its own variables initialised per `symbols`.
  std::shared_ptr<Frame> enter_frame(std::shared_ptr<Frame> parent, const FrameSymbols& symbols) const {
    auto f = std::make_shared<Frame>();
    f->vars.reserve(symbols.size());
    for (const auto& [name, kind] : symbols) {
      switch (kind) {
        case LoadKind::kParameter:
        case LoadKind::kUndefined: f->vars.emplace_back(name, Value::undefined(name)); break;
        case LoadKind::kResolve: f->vars.emplace_back(name, resolve(name)); break;
        case LoadKind::kAlias: f->vars.emplace_back(name, lookup_from(parent.get(), name)); break;
      }
    }
    f->parent = std::move(parent);
    return f;
  }

  // Runs `fn` inside a new frame below `parent`.
  template <typename Fn>
  auto in_frame(std::shared_ptr<Frame> parent, const FrameSymbols& symbols, Fn&& fn) {
    auto saved = frame_;
    frame_ = enter_frame(std::move(parent), symbols);
    auto result = fn();
    frame_ = saved;
    return result;
  }

  // ---- statements ----------------------------------------------------------
  Result<Flow> exec_body(const Body& body, TextBuilder& out) {
    for (const NodePtr& n : body) {
      LADDER_ASSIGN_OR_RETURN(Flow flow, exec(*n, out));
      if (flow != Flow::kNormal) return flow;
      if (out.size() > options_.max_output_bytes) {
        return out_of_range(kLinePrefix + std::to_string(n->line) + ": rendered output exceeds " +
                            std::to_string(options_.max_output_bytes) + " bytes");
      }
    }
    return Flow::kNormal;
  }

  Result<Flow> exec(const Node& n, TextBuilder& out) {
    switch (n.kind) {
      case NodeKind::kText: out.append(n.text); return Flow::kNormal;
      case NodeKind::kPrint: {
        LADDER_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        v.append_to(out);
        return Flow::kNormal;
      }
      case NodeKind::kIf: {
        for (size_t i = 0; i < n.conditions.size(); ++i) {
          LADDER_ASSIGN_OR_RETURN(Value c, eval(*n.conditions[i]));
          if (c.truthy()) return exec_body(n.bodies[i], out);
        }
        return exec_body(n.else_body, out);
      }
      case NodeKind::kFor: return exec_for(n, out);
      case NodeKind::kSet: return exec_set(n);
      case NodeKind::kSetBlock: {
        TextBuilder captured;
        LADDER_ASSIGN_OR_RETURN(Flow flow, in_frame(frame_, n.symbols, [&] { return exec_body(n.body, captured); }));
        (void)flow;
        Value v(captured.take());
        if (n.filter) {
          LADDER_ASSIGN_OR_RETURN(v, eval_with_block_value(*n.filter, std::move(v)));
        }
        assign(n.targets[0], std::move(v));
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        TextBuilder captured;
        LADDER_ASSIGN_OR_RETURN(Flow flow, in_frame(frame_, n.symbols, [&] { return exec_body(n.body, captured); }));
        (void)flow;
        LADDER_ASSIGN_OR_RETURN(Value v, eval_with_block_value(*n.filter, Value(captured.take())));
        v.append_to(out);
        return Flow::kNormal;
      }
      case NodeKind::kMacro: assign(n.name, make_macro(n)); return Flow::kNormal;
      case NodeKind::kCallBlock: {
        const Expr& call = *n.expr;
        LADDER_ASSIGN_OR_RETURN(Value fn, eval(*call.children[0]));
        LADDER_ASSIGN_OR_RETURN(CallArgs args, eval_args(call));
        args.keyword.emplace_back("caller", make_caller(n));
        LADDER_ASSIGN_OR_RETURN(Value v, call_value(fn, args, call.line));
        v.append_to(out);
        return Flow::kNormal;
      }
      case NodeKind::kBreak: return Flow::kBreak;
      case NodeKind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  Status bind_targets(const Node& n, const Value& item) {
    if (!n.unpack) {
      assign(n.targets[0], item);
      return Status::ok();
    }
    Result<List> parts = iterate(item);
    if (!parts.is_ok() || item.is_undefined()) {
      return invalid_argument(kLinePrefix + std::to_string(n.line) + ": cannot unpack non-iterable " +
                              kind_type_name(item.kind()) + " object");
    }
    if (parts->size() != n.targets.size()) {
      return invalid_argument(kLinePrefix + std::to_string(n.line) + ": " +
                              (parts->size() > n.targets.size() ? "too many" : "not enough") +
                              " values to unpack (expected " + std::to_string(n.targets.size()) + ", got " +
                              std::to_string(parts->size()) + ")");
    }
    for (size_t i = 0; i < n.targets.size(); ++i) assign(n.targets[i], (*parts)[i]);
    return Status::ok();
  }

  Result<Flow> exec_for(const Node& n, TextBuilder& out) {
    LADDER_ASSIGN_OR_RETURN(Value seq, eval(*n.expr));
    Result<List> listed = iterate(seq);
    if (!listed.is_ok()) return at_line(listed.status(), n.line);
    List items = std::move(listed).value();
    if (n.filter) {
      List kept;
      for (const Value& item : items) {
        LADDER_ASSIGN_OR_RETURN(bool keep, in_frame(frame_, n.test_symbols, [&]() -> Result<bool> {
                                  LADDER_RETURN_IF_ERROR(bind_targets(n, item));
                                  LADDER_ASSIGN_OR_RETURN(Value c, eval(*n.filter));
                                  return c.truthy();
                                }));
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      return in_frame(frame_, n.else_symbols, [&] { return exec_body(n.else_body, out); });
    }
    const int64_t len = static_cast<int64_t>(items.size());
    // One loop.cycle for the whole loop; it reads the current index.
    auto index = std::make_shared<int64_t>(0);
    Value cycle = Value::callable("loop.cycle", [index](const CallArgs& a) -> Result<Value> {
      if (a.positional.empty()) return invalid_argument("no items for cycling given");
      return a.positional[static_cast<size_t>(*index) % a.positional.size()];
    });
    // loop.changed(*values): true when the values differ from the previous call's.
    auto last_changed = std::make_shared<std::optional<Value>>();
    Value changed = Value::callable("loop.changed", [last_changed](const CallArgs& a) -> Result<Value> {
      Value now = Value::tuple(a.positional);
      if (last_changed->has_value() && (*last_changed)->equals(now)) return Value(false);
      *last_changed = now;
      return Value(true);
    });
    // Shared key strings: building `loop` allocates no text per iteration.
    static const Value kKeys[] = {Value("index"),  Value("index0"), Value("revindex"), Value("revindex0"),
                                  Value("first"),  Value("last"),   Value("length"),   Value("depth"),
                                  Value("depth0"), Value("previtem"), Value("nextitem"), Value("cycle"),
                                  Value("changed")};
    for (int64_t i = 0; i < len; ++i) {
      const size_t at = static_cast<size_t>(i);
      *index = i;
      Dict loop;
      loop.entries.reserve(13);
      loop.entries.emplace_back(kKeys[0], Value(i + 1));
      loop.entries.emplace_back(kKeys[1], Value(i));
      loop.entries.emplace_back(kKeys[2], Value(len - i));
      loop.entries.emplace_back(kKeys[3], Value(len - i - 1));
      loop.entries.emplace_back(kKeys[4], Value(i == 0));
      loop.entries.emplace_back(kKeys[5], Value(i == len - 1));
      loop.entries.emplace_back(kKeys[6], Value(len));
      loop.entries.emplace_back(kKeys[7], Value(int64_t{1}));
      loop.entries.emplace_back(kKeys[8], Value(int64_t{0}));
      if (i > 0) loop.entries.emplace_back(kKeys[9], items[at - 1]);
      if (i + 1 < len) loop.entries.emplace_back(kKeys[10], items[at + 1]);
      loop.entries.emplace_back(kKeys[11], cycle);
      loop.entries.emplace_back(kKeys[12], changed);
      Value loop_value = Value::dict(std::move(loop));
      LADDER_ASSIGN_OR_RETURN(Flow flow, in_frame(frame_, n.symbols, [&]() -> Result<Flow> {
                                assign("loop", loop_value);
                                LADDER_RETURN_IF_ERROR(bind_targets(n, items[at]));
                                return exec_body(n.body, out);
                              }));
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Result<Flow> exec_set(const Node& n) {
    LADDER_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
    if (!n.attr.empty()) {
      Value target = lookup(n.targets[0]);
      if (!target.is_namespace()) {
        return invalid_argument(kLinePrefix + std::to_string(n.line) + ": cannot assign attribute on non-namespace object '" +
                                n.targets[0] + "'");
      }
      target.mapping().set(Value(n.attr), std::move(v));
      return Flow::kNormal;
    }
    LADDER_RETURN_IF_ERROR(bind_targets(n, v));
    return Flow::kNormal;
  }

  // ---- macros --------------------------------------------------------------
  // Macros close over the frame they are defined in (weakly: a frame that
  // holds the macro must not keep itself alive).
  Value make_macro(const Node& n) {
    const Node* node = &n;
    std::weak_ptr<Frame> closure = frame_;
    return Value::callable("Macro '" + n.name + "'", [this, node, closure](const CallArgs& args) -> Result<Value> {
      return call_macro(*node, closure, args, node->name);
    });
  }

  Value make_caller(const Node& n) {
    const Node* node = &n;
    std::weak_ptr<Frame> closure = frame_;
    return Value::callable("caller", [this, node, closure](const CallArgs& args) -> Result<Value> {
      return call_macro(*node, closure, args, "caller");
    });
  }

  Result<Value> call_macro(const Node& n, const std::weak_ptr<Frame>& closure, const CallArgs& args,
                           const std::string& name) {
    const std::vector<MacroParam>& params = n.params;
    const Body& body = n.body;
    std::shared_ptr<Frame> parent = closure.lock();
    if (!parent) parent = root_;
    if (depth_ >= options_.max_call_depth) {
      return out_of_range(kLinePrefix + std::to_string(n.line) + ": macro '" + name + "' nested deeper than " +
                          std::to_string(options_.max_call_depth) + " calls");
    }
    // The native stack is bounded too: where frames are large (a sanitizer
    // build), max_call_depth calls may not fit in a thread's stack.
    const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    if (stack_top_ > here && stack_top_ - here > kMaxStackBytes) {
      return out_of_range(kLinePrefix + std::to_string(n.line) + ": macro '" + name + "' nested deeper than " +
                          std::to_string(depth_) + " calls, the most " + std::to_string(kMaxStackBytes >> 20) +
                          " MiB of stack holds");
    }
    if (args.positional.size() > params.size() && !n.uses_varargs) {
      return invalid_argument(kLinePrefix + std::to_string(n.line) + ": macro '" + name + "' takes not more than " +
                              std::to_string(params.size()) + " argument(s)");
    }
    ++depth_;
    std::vector<bool> given(params.size(), false);
    Result<Value> result = in_frame(parent, n.symbols, [&]() -> Result<Value> {
      Dict extra_kwargs;
      for (const auto& [k, v] : args.keyword) {
        if (k == "caller") {
          if (!n.uses_caller) {
            return invalid_argument(kLinePrefix + std::to_string(n.line) + ": macro '" + name +
                                    "' was invoked with a caller but does not use one");
          }
          assign(k, v);
          continue;
        }
        bool known = false;
        for (size_t i = 0; i < params.size(); ++i) {
          if (params[i].name != k) continue;
          // A keyword naming a parameter already given positionally is an error, as in jinja2.
          known = i >= args.positional.size();
          given[i] = true;
        }
        if (!known) {
          if (n.uses_kwargs) {
            extra_kwargs.set(Value(k), v);
            continue;
          }
          return invalid_argument(kLinePrefix + std::to_string(n.line) + ": macro '" + name +
                                  "' takes no keyword argument '" + k + "'");
        }
        assign(k, v);
      }
      if (n.uses_varargs) {
        List rest;
        for (size_t i = params.size(); i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
        assign("varargs", Value::tuple(std::move(rest)));
      }
      if (n.uses_kwargs) assign("kwargs", Value::dict(std::move(extra_kwargs)));
      for (size_t i = 0; i < params.size(); ++i) {
        const MacroParam& p = params[i];
        if (i < args.positional.size()) {
          assign(p.name, args.positional[i]);
        } else if (!given[i]) {
          if (p.default_value) {
            LADDER_ASSIGN_OR_RETURN(Value d, eval(*p.default_value));
            assign(p.name, std::move(d));
          } else {
            assign(p.name, Value::undefined(p.name, "parameter '" + p.name + "' was not provided"));
          }
        }
      }
      TextBuilder out;
      LADDER_ASSIGN_OR_RETURN(Flow flow, exec_body(body, out));
      (void)flow;
      return Value(out.take());
    });
    --depth_;
    return result;
  }

  // ---- expressions ---------------------------------------------------------
  Result<Value> eval_with_block_value(const Expr& filter_chain, Value block_value) {
    auto saved = block_value_;
    block_value_ = std::move(block_value);
    Result<Value> r = eval(filter_chain);
    block_value_ = saved;
    return r;
  }

  Result<CallArgs> eval_args(const Expr& e) {
    CallArgs args;
    for (size_t i = 1; i < e.children.size(); ++i) {
      LADDER_ASSIGN_OR_RETURN(Value v, eval(*e.children[i]));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [k, x] : e.kwargs) {
      LADDER_ASSIGN_OR_RETURN(Value v, eval(*x));
      args.keyword.emplace_back(k, std::move(v));
    }
    return args;
  }

  Result<Value> call_value(const Value& fn, const CallArgs& args, int line) {
    if (fn.is_undefined()) return at_line(undefined_error(fn), line);
    if (!fn.is_callable()) {
      return invalid_argument(kLinePrefix + std::to_string(line) + ": '" + kind_type_name(fn.kind()) +
                              "' object is not callable");
    }
    Result<Value> r = fn.function().fn(args);
    if (!r.is_ok()) return at_line(r.status(), line);
    return r;
  }

  template <typename T>
  Result<T> lined(Result<T> r, int line) {
    if (!r.is_ok()) return at_line(r.status(), line);
    return r;
  }

  Result<Value> eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral: return e.literal;
      case ExprKind::kName: return lookup(e.name);
      case ExprKind::kBlockValue: return block_value_;
      case ExprKind::kList:
      case ExprKind::kTuple: {
        List items;
        for (const ExprPtr& c : e.children) {
          LADDER_ASSIGN_OR_RETURN(Value v, eval(*c));
          items.push_back(std::move(v));
        }
        return e.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
      case ExprKind::kDict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          LADDER_ASSIGN_OR_RETURN(Value k, eval(*e.children[i]));
          LADDER_ASSIGN_OR_RETURN(Value v, eval(*e.children[i + 1]));
          d.set(std::move(k), std::move(v));
        }
        return Value::dict(std::move(d));
      }
      case ExprKind::kAttr: {
        LADDER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
        return lined(get_attribute(obj, e.name), e.line);
      }
      case ExprKind::kItem: {
        LADDER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
        LADDER_ASSIGN_OR_RETURN(Value key, eval(*e.children[1]));
        return lined(get_item(obj, key), e.line);
      }
      case ExprKind::kSlice: {
        LADDER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (!e.children[static_cast<size_t>(i) + 1]) continue;
          LADDER_ASSIGN_OR_RETURN(parts[i], eval(*e.children[static_cast<size_t>(i) + 1]));
        }
        return lined(get_slice(obj, e.children[1] ? &parts[0] : nullptr, e.children[2] ? &parts[1] : nullptr,
                               e.children[3] ? &parts[2] : nullptr),
                     e.line);
      }
      case ExprKind::kCall: {
        LADDER_ASSIGN_OR_RETURN(Value fn, eval(*e.children[0]));
        LADDER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e));
        return call_value(fn, args, e.line);
      }
      case ExprKind::kFilter: {
        LADDER_ASSIGN_OR_RETURN(Value input, eval(*e.children[0]));
        LADDER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e));
        return lined(apply_filter(e.name, input, args), e.line);
      }
      case ExprKind::kTest: {
        LADDER_ASSIGN_OR_RETURN(Value input, eval(*e.children[0]));
        LADDER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e));
        LADDER_ASSIGN_OR_RETURN(bool r, lined(apply_test(e.name, input, args), e.line));
        return Value(r != e.negated);
      }
      case ExprKind::kUnary: {
        LADDER_ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
        if (e.name == "not") return Value(!v.truthy());
        if (v.is_undefined()) return at_line(undefined_error(v), e.line);
        if (!v.is_number()) {
          return invalid_argument(kLinePrefix + std::to_string(e.line) + ": bad operand type for unary " + e.name +
                                  ": '" + kind_type_name(v.kind()) + "'");
        }
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        if (v.is_float()) return Value(-v.as_double());
        if (v.as_int() == INT64_MIN) {
          return out_of_range(kLinePrefix + std::to_string(e.line) + ": integer overflow in unary '-'");
        }
        return Value(-v.as_int());
      }
      case ExprKind::kBinary: {
        LADDER_ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
        LADDER_ASSIGN_OR_RETURN(Value b, eval(*e.children[1]));
        return lined(binary_op(e.name, a, b), e.line);
      }
      case ExprKind::kAnd: {
        LADDER_ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
        if (!a.truthy()) return a;
        return eval(*e.children[1]);
      }
      case ExprKind::kOr: {
        LADDER_ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
        if (a.truthy()) return a;
        return eval(*e.children[1]);
      }
      case ExprKind::kCompare: {
        LADDER_ASSIGN_OR_RETURN(Value left, eval(*e.children[0]));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          LADDER_ASSIGN_OR_RETURN(Value right, eval(*e.children[i + 1]));
          LADDER_ASSIGN_OR_RETURN(bool ok, lined(compare_op(e.ops[i], left, right), e.line));
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kCondition: {
        LADDER_ASSIGN_OR_RETURN(Value test, eval(*e.children[1]));
        if (test.truthy()) return eval(*e.children[0]);
        if (e.children[2]) return eval(*e.children[2]);
        return Value::undefined("", "the inline if-expression on line " + std::to_string(e.line) +
                                        " evaluated to false and no else section was defined.");
      }
    }
    return internal_error("unknown expression kind");
  }

  RenderOptions options_;
  Dict globals_;
  std::unordered_map<std::string, Value> context_;   // the render context
  std::unordered_map<std::string, Value> exported_;  // top-level assignments so far
  std::shared_ptr<Frame> root_;
  std::shared_ptr<Frame> frame_;
  Value block_value_;
  int depth_ = 0;
  // Where the render began on the native stack (it grows down), and how much
  // of it nested macro calls may use: threads get 8 MiB by default.
  uintptr_t stack_top_ = 0;
  static constexpr uintptr_t kMaxStackBytes = uintptr_t{2} << 20;
};

}  // namespace

Result<Text> render_ast(const TemplateAst& ast, const Dict& context, const RenderOptions& options) {
  Interpreter interpreter(context, options);
  return interpreter.render(ast);
}

}  // namespace ladder::jinja
