// How a model writes tool calls, and which way a given model does.
//
//   kHermes            <tool_call>{"name": "f", "arguments": {...}}</tool_call>, one block per
//                      call, text allowed before (Hermes 2/3, Qwen 2.5, Granite, MiMo, Bielik)
//   kLlama3Json        {"name": "f", "parameters": {...}} as the whole reply, optionally after
//                      <|python_tag|>; several calls separated by ';' (Llama 3.1-3.3)
//   kMistralJsonArray  [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] (Mistral Nemo, v3)
//   kMistralArgs       [TOOL_CALLS]f[ARGS]{...}, repeated per call, optionally
//                      [TOOL_CALLS]f[CALL_ID]id[ARGS]{...} (Mistral Small 3.2, Devstral, Ministral 3)
//
// Parsers accept "arguments" and "parameters" in every JSON format.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ladder::grammar {

class TokenVocabulary;

enum class ToolCallFormat { kHermes, kLlama3Json, kMistralJsonArray, kMistralArgs };

const char* tool_call_format_name(ToolCallFormat format);

struct DetectedToolCallFormat {
  ToolCallFormat format = ToolCallFormat::kHermes;
  // false: nothing in the template or vocabulary named a format, and
  // kHermes is the fallback (markers that cannot be mistaken for prose).
  bool detected = false;
};

// From the chat template's text first, then the vocabulary's marker tokens
// (vocabulary may be null).
DetectedToolCallFormat detect_tool_call_format(std::string_view chat_template,
                                               const TokenVocabulary* vocabulary);

// The marker texts of a format. Where the vocabulary has one as a special
// token, the detokenizer drops it by default: the text handed to the tool-call
// parser must keep these (render them as their text).
std::vector<std::string> tool_call_markers(ToolCallFormat format);

// For a chat template that does not render `tools` itself (the ChatML
// fallback, many older templates): a system-prompt text listing the tools
// (OpenAI's `tools` array: name, description, JSON Schema of the arguments)
// and how to call one in `format`. Documented in the README ("Tool calls").
std::string tool_preamble(const nlohmann::ordered_json& tools, ToolCallFormat format);

}  // namespace ladder::grammar
