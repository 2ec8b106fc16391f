#include "tokenizer/chat/chat_template.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "common/check.h"
#include "gguf/gguf_file.h"
#include "tokenizer/chat/ast.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/parser.h"

namespace ladder::chat {
namespace {

constexpr const char* kGgufChatTemplateKey = "tokenizer.chat_template";

constexpr const char* kChatMlSource =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] is iterable %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{% if message['tool_calls'] is defined %}"
    "{% for tool_call in message['tool_calls'] %}"
    "{{ '<tool_call>\\n' + (tool_call['function'] | tojson) + '\\n</tool_call>' }}"
    "{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Request JSON deeper than this is refused before it is converted (the
// conversion and the template's own walks recurse once per level).
constexpr size_t kMaxJsonDepth = 128;

Status check_depth(const nlohmann::ordered_json& root, const char* what) {
  std::vector<std::pair<const nlohmann::ordered_json*, size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [j, depth] = stack.back();
    stack.pop_back();
    if (!j->is_structured()) continue;
    if (depth > kMaxJsonDepth) {
      return invalid_argument(std::string("chat template: ") + what + " nests deeper than " +
                              std::to_string(kMaxJsonDepth) + " levels");
    }
    for (const auto& child : *j) stack.emplace_back(&child, depth + 1);
  }
  return Status::ok();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  try {
    LADDER_ASSIGN_OR_RETURN(TemplateAst ast, parse_template(source));
    return ChatTemplate(std::move(source), std::make_shared<const TemplateAst>(std::move(ast)));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while parsing");
  }
}

ChatTemplate ChatTemplate::chatml() {
  Result<ChatTemplate> t = parse(kChatMlSource);
  LADDER_CHECK(t.is_ok(), "the built-in ChatML template must parse: " + t.status().to_string());
  return std::move(t).value();
}

Result<std::string> ChatTemplate::render(const ChatRenderInput& input) const {
  if (!input.messages.is_array()) return invalid_argument("chat template: messages must be a JSON array");
  if (!input.extra.is_null() && !input.extra.is_object()) {
    return invalid_argument("chat template: extra context must be a JSON object");
  }
  LADDER_RETURN_IF_ERROR(check_depth(input.messages, "messages"));
  if (input.tools) LADDER_RETURN_IF_ERROR(check_depth(*input.tools, "tools"));
  LADDER_RETURN_IF_ERROR(check_depth(input.extra, "extra context"));
  Dict context;
  context.set(Value("messages"), Value::from_json(input.messages));
  if (input.tools) context.set(Value("tools"), Value::from_json(*input.tools));
  context.set(Value("add_generation_prompt"), Value(input.add_generation_prompt));
  context.set(Value("bos_token"), Value(input.bos_token));
  context.set(Value("eos_token"), Value(input.eos_token));
  if (input.extra.is_object()) {
    for (const auto& [k, v] : input.extra.items()) context.set(Value(k), Value::from_json(v));
  }
  RenderOptions options;
  options.now = input.now;
  // Every size a template controls is bounded, but an allocation failure must
  // still come back as a Status, never take the server down.
  try {
    return render_ast(*ast_, context, options);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while rendering");
  } catch (const std::length_error&) {
    return resource_exhausted("chat template: a value grew beyond the supported length");
  }
}

Result<ChatTemplate> chat_template_from_gguf(const gguf::GgufFile& file) {
  const gguf::Value* v = file.find(kGgufChatTemplateKey);
  if (!v) {
    spdlog::warn("{} has no {}; using the ChatML template", file.path().empty() ? "the model" : file.path(),
                 kGgufChatTemplateKey);
    return ChatTemplate::chatml();
  }
  std::optional<std::string_view> s = v->as_string();
  if (!s) return invalid_argument(std::string(kGgufChatTemplateKey) + " is not a string");
  Result<ChatTemplate> t = ChatTemplate::parse(std::string(*s));
  if (!t.is_ok()) {
    return Status(t.status().code(), std::string(kGgufChatTemplateKey) + ": " + t.status().message());
  }
  return t;
}

}  // namespace ladder::chat
