// `ladder chat-template -m FILE --messages JSON [--template FILE.jinja]
// [--tools JSON] [--no-generation-prompt]`: renders a conversation with the
// model's chat template (or the given one) and prints the prompt exactly as
// the server would tokenize it. bos/eos strings come from the model's
// tokenizer metadata.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/file_io.h"
#include "gguf/gguf_file.h"
#include "tokenizer/chat_template.h"

namespace ladder::cli {
namespace {

struct ChatTemplateOptions {
  std::string model;
  std::string messages;
  std::string template_path;
  std::string tools;
  bool no_generation_prompt = false;
};

// A JSON argument given inline, or as @FILE.
Result<nlohmann::ordered_json> parse_json_arg(const std::string& what, const std::string& arg) {
  std::string text = arg;
  if (!arg.empty() && arg[0] == '@') {
    LADDER_ASSIGN_OR_RETURN(text, read_file(arg.substr(1)));
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(what + " is not valid JSON");
  return j;
}

// tokenizer.ggml.tokens[tokenizer.ggml.<kind>_token_id], or "" when the model has none.
Result<std::string> special_token(const gguf::GgufFile& file, const std::string& kind) {
  const std::string id_key = "tokenizer.ggml." + kind + "_token_id";
  if (!file.find(id_key)) return std::string();
  LADDER_ASSIGN_OR_RETURN(uint64_t id, file.get_uint(id_key));
  LADDER_ASSIGN_OR_RETURN(std::vector<std::string> tokens, file.get_string_array("tokenizer.ggml.tokens"));
  if (id >= tokens.size()) {
    return invalid_argument(id_key + " = " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(tokens.size()) + " tokens");
  }
  return tokens[id];
}

Status run(const ChatTemplateOptions& opts) {
  tokenizer::ChatRenderInput input;
  LADDER_ASSIGN_OR_RETURN(input.messages, parse_json_arg("--messages", opts.messages));
  if (!input.messages.is_array()) return invalid_argument("--messages must be a JSON array of message objects");
  if (!opts.tools.empty()) {
    LADDER_ASSIGN_OR_RETURN(nlohmann::ordered_json tools, parse_json_arg("--tools", opts.tools));
    if (!tools.is_array()) return invalid_argument("--tools must be a JSON array");
    input.tools = std::move(tools);
  }
  input.add_generation_prompt = !opts.no_generation_prompt;

  std::string model = resolve_model_path(opts.model);
  if (model.empty()) return not_found("no model file");
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(model));
  LADDER_ASSIGN_OR_RETURN(input.bos_token, special_token(file, "bos"));
  LADDER_ASSIGN_OR_RETURN(input.eos_token, special_token(file, "eos"));

  std::unique_ptr<tokenizer::ChatTemplate> tmpl;
  if (!opts.template_path.empty()) {
    LADDER_ASSIGN_OR_RETURN(std::string source, read_file(opts.template_path));
    LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate t, tokenizer::ChatTemplate::parse(std::move(source)));
    tmpl = std::make_unique<tokenizer::ChatTemplate>(std::move(t));
  } else {
    LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate t, tokenizer::chat_template_from_gguf(file));
    tmpl = std::make_unique<tokenizer::ChatTemplate>(std::move(t));
  }
  LADDER_ASSIGN_OR_RETURN(jinja::Text prompt, tmpl->render(input));
  std::fwrite(prompt.bytes().data(), 1, prompt.size(), stdout);
  return Status::ok();
}

CommandRegistrar register_chat_template{"chat-template", 31, [](CLI::App& app) -> CommandRun {
                       auto* cmd = app.add_subcommand("chat-template",
                                                      "Render a conversation with a model's chat template and print the prompt");
                       auto opts = std::make_shared<ChatTemplateOptions>();
                       cmd->add_option("-m,--model", opts->model, "GGUF model (default: $LADDER_MODEL or the shared test model)");
                       cmd->add_option("--messages", opts->messages, "OpenAI-style messages as JSON (or @FILE)")->required();
                       cmd->add_option("--template", opts->template_path, "Use this .jinja file instead of the model's template");
                       cmd->add_option("--tools", opts->tools, "Tool definitions as a JSON array (or @FILE)");
                       cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt,
                                     "Do not append the assistant turn opener (add_generation_prompt=false)");
                       return [opts] {
                         Status st = run(*opts);
                         if (!st.is_ok()) {
                           std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
                           return 1;
                         }
                         return 0;
                       };
                     }};

}  // namespace
}  // namespace ladder::cli
