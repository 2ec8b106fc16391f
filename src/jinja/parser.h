// Parser: token stream -> TemplateAst, following jinja2's grammar and operator
// precedence (or < and < not < comparisons < + - < ~ < * / // % < ** < unary,
// with filters and `is` tests binding to the unary operand). A construct
// outside the supported subset is a Status naming it and its line.
#pragma once

#include <string>

#include "common/status.h"
#include "jinja/ast.h"

namespace ladder::jinja {

Result<TemplateAst> parse_template(const std::string& source);

}  // namespace ladder::jinja
