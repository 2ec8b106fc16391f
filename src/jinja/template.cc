#include "jinja/template.h"

#include <new>
#include <stdexcept>
#include <utility>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/parser.h"

namespace ladder::jinja {

Result<Template> Template::parse(std::string source) {
  try {
    LADDER_ASSIGN_OR_RETURN(TemplateAst ast, parse_template(source));
    return Template(std::move(source), std::make_shared<const TemplateAst>(std::move(ast)));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("template: out of memory while parsing");
  }
}

Result<Text> Template::render(const Dict& context, const RenderOptions& options) const {
  // Every size a template controls is bounded, but an allocation failure must
  // still come back as a Status, never take the caller down.
  try {
    return render_ast(*ast_, context, options);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("template: out of memory while rendering");
  } catch (const std::length_error&) {
    return resource_exhausted("template: a value grew beyond the supported length");
  }
}

}  // namespace ladder::jinja
