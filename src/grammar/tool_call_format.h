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

}  // namespace ladder::grammar
