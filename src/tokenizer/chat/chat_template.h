// ChatTemplate: a model's Jinja chat template, parsed once and rendered per
// request into the prompt text. Rendering matches python3-jinja2 configured
// the way Hugging Face transformers renders chat templates (sandboxed,
// trim_blocks, lstrip_blocks, loopcontrols, tojson with ensure_ascii=False,
// raise_exception, strftime_now) byte for byte on the templates in
// ../shared/chat-templates.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ladder::gguf {
class GgufFile;
}  // namespace ladder::gguf

namespace ladder::chat {

struct TemplateAst;

struct ChatRenderInput {
  // OpenAI-style messages: [{role, content (string or list of parts),
  // tool_calls, tool_call_id, name, ...}]. Object key order is kept, as a
  // Python dict keeps it, because `tojson` prints keys in that order.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // The `tools` list; absent means the template sees `tools` undefined.
  std::optional<nlohmann::ordered_json> tools;
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  // More template variables (e.g. enable_thinking); an object. They override
  // the fields above when names collide, as **kwargs do in transformers.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // The time strftime_now() formats; unset means the clock.
  std::optional<std::time_t> now;
};

class ChatTemplate {
 public:
  // Parses a template; a syntax error or a construct outside the supported
  // subset is kInvalidArgument / kUnimplemented naming it and its line.
  static Result<ChatTemplate> parse(std::string source);
  // The ChatML template (<|im_start|>role\ncontent<|im_end|>\n ...), used when
  // a model carries none.
  static ChatTemplate chatml();

  // Renders the prompt. raise_exception() in the template, an undefined value
  // used where jinja2 would fail, or a type error is a Status naming the
  // template line.
  Result<std::string> render(const ChatRenderInput& input) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source, std::shared_ptr<const TemplateAst> ast)
      : source_(std::move(source)), ast_(std::move(ast)) {}

  std::string source_;
  std::shared_ptr<const TemplateAst> ast_;
};

// The template in the GGUF key tokenizer.chat_template; when the key is absent,
// the ChatML fallback (logged with spdlog::warn).
Result<ChatTemplate> chat_template_from_gguf(const gguf::GgufFile& file);

}  // namespace ladder::chat
