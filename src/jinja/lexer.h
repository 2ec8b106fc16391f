// Lexer: template source -> a flat token stream, applying jinja2's whitespace
// rules as Hugging Face configures them (trim_blocks, lstrip_blocks), the
// `-`/`+` modifiers on tags, comments, {% raw %}, and the removal of one
// trailing newline (keep_trailing_newline=False).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ladder::jinja {

enum class TokenType {
  kData,        // literal template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value: decoded text
  kInt,
  kFloat,
  kOperator,    // value: the operator text ("+", "//", "(", ...)
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

Result<std::vector<Token>> tokenize(const std::string& source, const LexOptions& options = {});

}  // namespace ladder::jinja
