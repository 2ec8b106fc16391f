// Interpreter: walks a TemplateAst with a context of Values and writes the
// rendered text. Scoping follows jinja2: a for-loop iteration and a macro call
// get their own frame (so `set` inside a loop does not leak out; namespaces
// are the way to carry state out), while `if` shares its enclosing frame.
#pragma once

#include "common/status.h"
#include "jinja/ast.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace ladder::jinja {

// Renders `ast` with `context` (name -> value) on top of the globals
// (range, dict, namespace, raise_exception, strftime_now).
Result<Text> render_ast(const TemplateAst& ast, const Dict& context, const RenderOptions& options);

}  // namespace ladder::jinja
