// Scope analysis: decides, as jinja2's compiler does, which frame owns each
// variable and how it is initialised when the frame is entered. This is what
// makes `{% set %}` inside a loop invisible after it, a loop body that reads a
// name before setting it see the outer value on every iteration, and a name
// assigned at top level later in the template read as undefined from a loop
// or macro that runs before the assignment.
#pragma once

#include "jinja/ast.h"

namespace ladder::jinja {

// Fills TemplateAst::symbols and every frame-opening Node's symbols.
void analyze_scopes(TemplateAst& ast);

}  // namespace ladder::jinja
