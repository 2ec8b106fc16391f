// Interpreter: walks a TemplateAst with a context of Values and writes the
// rendered text. Scoping follows jinja2: a for-loop iteration and a macro call
// get their own frame (so `set` inside a loop does not leak out; namespaces
// are the way to carry state out), while `if` shares its enclosing frame.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tokenizer/chat/ast.h"
#include "tokenizer/chat/value.h"

namespace ladder::chat {

struct RenderOptions {
  // The time strftime_now() formats (local time); unset means the clock.
  std::optional<std::time_t> now;
  // Bounds that keep a hostile template from exhausting the stack or memory.
  int max_call_depth = 256;
  size_t max_output_bytes = size_t{64} << 20;
};

// Renders `ast` with `context` (name -> value) on top of the globals
// (range, dict, namespace, raise_exception, strftime_now).
Result<std::string> render_ast(const TemplateAst& ast, const Dict& context, const RenderOptions& options);

}  // namespace ladder::chat
