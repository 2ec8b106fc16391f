// Regular expressions -> GBNF. JSON Schema `pattern`: an ECMAScript regular expression (the
// practical subset below) becomes an expression for the *JSON text* between
// a string's quotes whose decoded value the pattern matches. Characters that
// JSON must escape (", \, control characters) are written escaped.
//
// Supported: literals and escaped punctuation, . (not a line terminator),
// [...] classes with ranges and negation, \d \D \w \W \s \S, \t \n \r \f \v
// \0 \xHH \uHHHH \u{H...}, groups ( ) (?: ) (?<name> ), alternation |,
// quantifiers * + ? {n} {n,} {n,m} (lazy forms too: they match the same
// strings), ^ at the start and $ at the end of a top-level alternative. A
// side without its anchor matches anything there, as `pattern` searches.
// Refused with kUnimplemented naming the construct: backreferences,
// lookaround, \b \B, \p{..}, inline flags, anchors elsewhere.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "grammar/gbnf_builder.h"

namespace ladder::grammar {

Result<std::string> regex_to_json_content(std::string_view pattern, GbnfBuilder* builder);

// A whole output that matches `pattern` (vLLM's guided_regex): a grammar
// whose root is the regex, characters raw. The match is always whole: ^ and
// $ may be written and change nothing.
Result<std::string> regex_to_gbnf(std::string_view pattern);

}  // namespace ladder::grammar
