// ChatTemplate: a model's Jinja chat template (GGUF tokenizer.chat_template),
// parsed once and rendered per request into the prompt. Rendering matches
// python3-jinja2 configured as Hugging Face transformers renders chat
// templates (src/jinja) byte for byte on the templates in
// ../shared/chat-templates.
//
// The rendered prompt is marked text: everything that came from the request
// (messages, tools, template kwargs) is data, and Tokenizer::encode_rendered
// recognises special-token markers only outside it, so a literal "</s>" or
// "<|im_start|>" in a message stays text.
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jinja/template.h"
#include "jinja/text.h"

namespace ladder::gguf {
class GgufFile;
}  // namespace ladder::gguf

namespace ladder::tokenizer {

// What a chat template renders. Object key order is kept, as a Python dict
// keeps it, because `tojson` prints keys in that order.
struct ChatRenderInput {
  // OpenAI-style messages: [{role, content (string, null or a list of
  // {"type": "text", "text": ...} parts), tool_calls, tool_call_id, name, ...}].
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // The request's `tools`; absent means the template sees `tools` undefined.
  std::optional<nlohmann::ordered_json> tools;
  bool add_generation_prompt = true;
  // Template text, not data: they come from the model's vocabulary.
  std::string bos_token;
  std::string eos_token;
  // More template variables (e.g. enable_thinking); an object. They override
  // the fields above when names collide, as **kwargs do in transformers.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  // The time strftime_now() formats; unset means the clock.
  std::optional<std::time_t> now;

  // The input of an OpenAI chat request: `messages` and (when given) `tools`
  // as the request carries them, checked for shape (kInvalidArgument naming
  // the field, e.g. "messages[2].tool_calls[0].function.name"; a content part
  // other than text is kUnimplemented naming its type). Nothing is rewritten
  // here: how content parts and tool-call arguments reach the template
  // depends on the template (ChatTemplate::context).
  static Result<ChatRenderInput> from_openai(const nlohmann::ordered_json& messages,
                                             const nlohmann::ordered_json* tools = nullptr);
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
  // template line; bad input (messages not an array, JSON nested too deep)
  // is kInvalidArgument.
  Result<jinja::Text> render(const ChatRenderInput& input) const;

  // The variables the template sees for `input`, as JSON: messages, tools,
  // add_generation_prompt, bos_token, eos_token, then the kwargs. In the
  // messages, content given as text parts is joined with "\n" into one
  // string unless the template reads parts (as vLLM does), and each tool
  // call's function.arguments (a JSON string in the OpenAI API) is the object
  // it encodes -- what templates written for Hugging Face iterate and
  // `tojson` -- unless the template prints arguments as given, then a JSON
  // string. Absent or "" arguments are {}; a string that is not a JSON
  // object stays a string.
  Result<nlohmann::ordered_json> context(const ChatRenderInput& input) const;

  // What parsing found by rendering probe conversations: whether the template
  // reads content as a list of text parts, and whether it wants tool-call
  // arguments as JSON strings (it concatenates them) rather than objects.
  bool reads_content_parts() const { return reads_content_parts_; }
  bool wants_argument_strings() const { return wants_argument_strings_; }
  // Whether the template prints the request's `tools` at all (many, and the
  // ChatML fallback, do not: the server then adds a tools preamble).
  bool renders_tools() const { return renders_tools_; }

  const std::string& source() const { return template_.source(); }

 private:
  explicit ChatTemplate(jinja::Template t) : template_(std::move(t)) {}

  jinja::Template template_;
  bool reads_content_parts_ = false;
  bool wants_argument_strings_ = false;
  bool renders_tools_ = false;
};

// The template in the GGUF key tokenizer.chat_template; when the key is absent,
// the ChatML fallback (logged with spdlog::warn).
Result<ChatTemplate> chat_template_from_gguf(const gguf::GgufFile& file);

// The template a command serves with: `chosen` when it is given (the path of
// a Jinja file, or the template text itself when no such file exists and it
// holds Jinja markup, as vLLM's --chat-template takes it), else the GGUF's.
Result<ChatTemplate> chat_template_for(const gguf::GgufFile& file, const std::string& chosen);

}  // namespace ladder::tokenizer
