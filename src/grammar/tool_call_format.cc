#include "grammar/tool_call_format.h"

#include "grammar/token_vocabulary.h"

namespace ladder::grammar {
namespace {

bool has(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3-json";
    case ToolCallFormat::kMistralJsonArray: return "mistral-json-array";
    case ToolCallFormat::kMistralArgs: return "mistral-args";
  }
  return "unknown";
}

DetectedToolCallFormat detect_tool_call_format(std::string_view tmpl, const TokenVocabulary* vocabulary) {
  if (has(tmpl, "[TOOL_CALLS]")) {
    return {has(tmpl, "[ARGS]") ? ToolCallFormat::kMistralArgs : ToolCallFormat::kMistralJsonArray, true};
  }
  // Hermes-style blocks hold JSON; templates that put XML-ish tags inside
  // <tool_call> (Qwen3-Coder, GLM, Nemotron) are other formats.
  const bool xml_inside = has(tmpl, "<function=") || has(tmpl, "<arg_key>") || has(tmpl, "<parameter=");
  if (has(tmpl, "<tool_call>") && !xml_inside && (has(tmpl, "{\"name\"") || has(tmpl, "{\\\"name\\\""))) {
    return {ToolCallFormat::kHermes, true};
  }
  if (has(tmpl, "<|start_header_id|>") && has(tmpl, "\"parameters\"") && has(tmpl, "{\"name\"")) {
    return {ToolCallFormat::kLlama3Json, true};
  }
  if (vocabulary != nullptr) {
    if (vocabulary->find_token("[TOOL_CALLS]") >= 0) {
      return {vocabulary->find_token("[ARGS]") >= 0 ? ToolCallFormat::kMistralArgs
                                                    : ToolCallFormat::kMistralJsonArray,
              true};
    }
    if (vocabulary->find_token("<tool_call>") >= 0) return {ToolCallFormat::kHermes, true};
    if (vocabulary->find_token("<|python_tag|>") >= 0) return {ToolCallFormat::kLlama3Json, true};
  }
  return {ToolCallFormat::kHermes, false};
}

std::vector<std::string> tool_call_markers(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return {"<tool_call>", "</tool_call>"};
    case ToolCallFormat::kLlama3Json: return {"<|python_tag|>"};
    case ToolCallFormat::kMistralJsonArray: return {"[TOOL_CALLS]"};
    case ToolCallFormat::kMistralArgs: return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
  }
  return {};
}

}  // namespace ladder::grammar
