#include "grammar/tool_call_grammar.h"

#include <set>

#include "grammar/gbnf_builder.h"
#include "grammar/json_rules.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocabulary.h"

namespace ladder::grammar {

Result<std::vector<ToolSpec>> parse_openai_tools(const nlohmann::ordered_json& tools) {
  if (!tools.is_array()) return invalid_argument("tools must be a list");
  std::vector<ToolSpec> out;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return invalid_argument(at + " must be an object");
    if (!t.contains("type") || t["type"] != "function")
      return invalid_argument(at + ".type must be \"function\"");
    if (!t.contains("function") || !t["function"].is_object())
      return invalid_argument(at + ".function must be an object");
    const nlohmann::ordered_json& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty()) {
      return invalid_argument(at + ".function.name must be a non-empty string");
    }
    ToolSpec spec;
    spec.name = f["name"].get<std::string>();
    for (char c : spec.name) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      if (!ok) return invalid_argument(at + ".function.name may hold only a-z, A-Z, 0-9, '_' and '-'");
    }
    if (!names.insert(spec.name).second)
      return invalid_argument(at + ": a second tool named '" + spec.name + "'");
    if (f.contains("parameters")) {
      if (!f["parameters"].is_object())
        return invalid_argument(at + ".function.parameters must be a JSON Schema object");
      spec.parameters = f["parameters"];
    }
    out.push_back(std::move(spec));
  }
  return out;
}

namespace {

// A marker as a special token where the vocabulary has one, else as text.
std::string marker(std::string_view text, const TokenVocabulary* vocabulary) {
  if (vocabulary != nullptr) {
    int32_t id = vocabulary->find_token(text);
    if (id >= 0 && vocabulary->is_special(id)) return "<" + GbnfBuilder::literal(text) + ">";
  }
  return GbnfBuilder::literal(text);
}

}  // namespace

Result<std::string> tool_call_gbnf(const std::vector<ToolSpec>& tools, const ToolGrammarOptions& options,
                                   const TokenVocabulary* vocabulary) {
  if (tools.empty()) return invalid_argument("tool_choice forces a call, but there are no tools");
  std::vector<const ToolSpec*> chosen;
  for (const ToolSpec& t : tools) {
    if (options.function.empty() || t.name == options.function) chosen.push_back(&t);
  }
  if (chosen.empty()) {
    return invalid_argument("tool_choice names function '" + options.function +
                            "', which is not among the tools");
  }
  GbnfBuilder b;
  const std::string w = json_rules::ws(&b);
  const std::string args_key = options.format == ToolCallFormat::kLlama3Json ? "parameters" : "arguments";
  std::vector<std::string> calls;
  for (const ToolSpec* t : chosen) {
    std::string args;
    if (t->parameters.is_null()) {
      args = json_rules::object(&b);
    } else {
      auto r = add_json_schema(t->parameters, "tool-" + t->name, &b);
      if (!r.is_ok()) {
        return Status(r.status().code(), "tool '" + t->name + "' parameters: " + r.status().message());
      }
      args = r.value();
    }
    std::string call;
    if (options.format == ToolCallFormat::kMistralArgs) {
      call = marker("[TOOL_CALLS]", vocabulary) + " " + GbnfBuilder::literal(t->name) + " " +
             marker("[ARGS]", vocabulary) + " " + args;
    } else {
      call = "\"{\" " + w + " " + GbnfBuilder::literal("\"name\"") + " " + w + " \":\" " + w + " " +
             GbnfBuilder::literal(nlohmann::json(t->name).dump()) + " " + w + " \",\" " + w + " " +
             GbnfBuilder::literal("\"" + args_key + "\"") + " " + w + " \":\" " + w + " " + args + " " + w +
             " \"}\"";
    }
    calls.push_back(b.add_rule("call-" + t->name, call));
  }
  const std::string call = GbnfBuilder::alternation(calls);
  const bool many = options.parallel && options.format != ToolCallFormat::kLlama3Json;
  std::string root;
  switch (options.format) {
    case ToolCallFormat::kHermes: {
      const std::string block =
          b.add_rule("call-block", marker("<tool_call>", vocabulary) + " \"\\n\" " + call + " \"\\n\" " +
                                       marker("</tool_call>", vocabulary));
      root = many ? block + " ( \"\\n\" " + block + " )*" : block;
      break;
    }
    case ToolCallFormat::kLlama3Json: root = call; break;
    case ToolCallFormat::kMistralJsonArray:
      root = marker("[TOOL_CALLS]", vocabulary) + " \"[\" " + call +
             (many ? " ( " + w + " \",\" " + w + " " + call + " )*" : "") + " \"]\"";
      break;
    case ToolCallFormat::kMistralArgs: root = many ? call + "+" : call; break;
  }
  return b.text(root);
}

}  // namespace ladder::grammar
