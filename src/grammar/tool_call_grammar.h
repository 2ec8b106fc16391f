// Grammars that force a tool call in the model's own format: tool_choice
// "required" (any of the tools) or a named function. Each call's arguments
// follow its tool's `parameters` JSON Schema (json_schema.h), and the output
// parses back with ToolCallParser of the same format.
//
//   kHermes            <tool_call>\n{"name": "f", "arguments": ARGS}\n</tool_call>  (blocks joined by \n)
//   kLlama3Json        {"name": "f", "parameters": ARGS}  (one call: the format has no list)
//   kMistralJsonArray  [TOOL_CALLS][{"name": "f", "arguments": ARGS}, ...]
//   kMistralArgs       [TOOL_CALLS]f[ARGS]ARGS  (repeated per call)
//
// A marker the vocabulary holds as a special token is matched as that token
// (the model emits it so), otherwise as its text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar/tool_call_format.h"

namespace ladder::grammar {

class TokenVocabulary;

struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;  // JSON Schema of the arguments; null: any JSON object
};

// OpenAI `tools`: [{"type": "function", "function": {"name": ..., "description"?: ...,
// "parameters"?: {...}, "strict"?: bool}}]. kInvalidArgument naming what is wrong
// (a missing name, a duplicate, a type other than "function").
Result<std::vector<ToolSpec>> parse_openai_tools(const nlohmann::ordered_json& tools);

struct ToolGrammarOptions {
  ToolCallFormat format = ToolCallFormat::kHermes;
  // The forced function (tool_choice {"type": "function", "function": {"name": N}});
  // empty: any of the tools (tool_choice "required").
  std::string function;
  // More than one call (parallel_tool_calls); ignored for kLlama3Json.
  bool parallel = true;
};

// kInvalidArgument when `function` is not among the tools or there are no
// tools; the JSON Schema errors of a tool's parameters (naming the tool).
Result<std::string> tool_call_gbnf(const std::vector<ToolSpec>& tools, const ToolGrammarOptions& options,
                                   const TokenVocabulary* vocabulary);

}  // namespace ladder::grammar
