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

std::string tool_preamble(const nlohmann::ordered_json& tools, ToolCallFormat format) {
  std::string out =
      "You can call functions (tools). Here they are, one JSON object per line (name, description, and the "
      "JSON Schema of the arguments):\n";
  for (const auto& t : tools) {
    const nlohmann::ordered_json& f = t.contains("function") ? t["function"] : t;
    nlohmann::ordered_json line = {{"name", f.value("name", "")}};
    if (f.contains("description")) line["description"] = f["description"];
    line["parameters"] = f.contains("parameters") ? f["parameters"] : nlohmann::ordered_json::object();
    out += line.dump() + "\n";
  }
  out += "To call one, reply with ";
  switch (format) {
    case ToolCallFormat::kHermes:
      out += "<tool_call>{\"name\": NAME, \"arguments\": ARGUMENTS}</tool_call>, one such block per call";
      break;
    case ToolCallFormat::kLlama3Json:
      out += "{\"name\": NAME, \"parameters\": ARGUMENTS} as the whole reply; several calls separated by \";\"";
      break;
    case ToolCallFormat::kMistralJsonArray:
      out += "[TOOL_CALLS][{\"name\": NAME, \"arguments\": ARGUMENTS}], one object per call in the list";
      break;
    case ToolCallFormat::kMistralArgs:
      out += "[TOOL_CALLS]NAME[ARGS]ARGUMENTS, repeated per call";
      break;
  }
  out += ", where NAME is the function's name as a JSON string and ARGUMENTS a JSON object matching its "
         "parameters. Otherwise reply in plain text.";
  return out;
}

}  // namespace ladder::grammar
