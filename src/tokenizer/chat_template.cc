#include "tokenizer/chat_template.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/file_io.h"
#include "gguf/gguf_file.h"

namespace ladder::tokenizer {
namespace {

using ojson = nlohmann::ordered_json;

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

Status check_depth(const ojson& root, const char* what) {
  std::vector<std::pair<const ojson*, size_t>> stack{{&root, 1}};
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

Status bad_field(const std::string& field, const std::string& what) {
  return invalid_argument(field + " " + what).with_param(field);
}

// A string member when present: absent is fine, another type is not.
Status check_optional_string(const ojson& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it != object.end() && !it->is_string()) return bad_field(where + "." + key, "must be a string");
  return Status::ok();
}

Status check_content(const ojson& content, const std::string& where) {
  if (content.is_null() || content.is_string()) return Status::ok();
  if (!content.is_array()) return bad_field(where, "must be a string, null or a list of content parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const ojson& part = content[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return bad_field(at, "must be an object");
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return bad_field(at + ".type", "must be a string");
    if (*type != "text") {
      return unimplemented(at + ".type: content parts of type '" + type->get<std::string>() +
                           "' are not supported (text only)");
    }
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) return bad_field(at + ".text", "must be a string");
  }
  return Status::ok();
}

Status check_tool_call(const ojson& call, const std::string& where) {
  if (!call.is_object()) return bad_field(where, "must be an object");
  LADDER_RETURN_IF_ERROR(check_optional_string(call, "id", where));
  LADDER_RETURN_IF_ERROR(check_optional_string(call, "type", where));
  auto fn = call.find("function");
  if (fn == call.end() || !fn->is_object()) return bad_field(where + ".function", "must be an object");
  auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) return bad_field(where + ".function.name", "must be a string");
  auto args = fn->find("arguments");
  if (args != fn->end() && !args->is_null() && !args->is_string() && !args->is_object()) {
    return bad_field(where + ".function.arguments", "must be a JSON string or an object");
  }
  return Status::ok();
}

Status check_message(const ojson& m, const std::string& where) {
  if (!m.is_object()) return bad_field(where, "must be an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return bad_field(where + ".role", "must be a string");
  if (auto content = m.find("content"); content != m.end()) {
    LADDER_RETURN_IF_ERROR(check_content(*content, where + ".content"));
  }
  LADDER_RETURN_IF_ERROR(check_optional_string(m, "name", where));
  LADDER_RETURN_IF_ERROR(check_optional_string(m, "tool_call_id", where));
  if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
    if (!calls->is_array()) return bad_field(where + ".tool_calls", "must be a list");
    for (size_t i = 0; i < calls->size(); ++i) {
      LADDER_RETURN_IF_ERROR(check_tool_call((*calls)[i], where + ".tool_calls[" + std::to_string(i) + "]"));
    }
  }
  return Status::ok();
}

Status check_tools(const ojson& tools) {
  if (!tools.is_array()) return bad_field("tools", "must be a list");
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return bad_field(where, "must be an object");
    LADDER_RETURN_IF_ERROR(check_optional_string(t, "type", where));
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) return bad_field(where + ".function", "must be an object");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) return bad_field(where + ".function.name", "must be a string");
  }
  return Status::ok();
}

// json.dumps(j, ensure_ascii=False) with Python's default separators.
std::string python_json(const ojson& j) {
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += ojson(k).dump(-1, ' ', false, ojson::error_handler_t::replace) + ": " + python_json(v);
    }
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + python_json(j[i]);
    return out + "]";
  }
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// Messages as the template reads them: content parts joined with "\n" into a
// string unless it reads parts (as vLLM does); tool-call arguments as the
// objects they encode (absent or "" as {}), or as JSON strings for templates
// that print them as given.
ojson template_messages(const ojson& messages, bool content_parts, bool argument_strings) {
  ojson out = messages;
  for (ojson& m : out) {
    if (!m.is_object()) continue;
    auto content = m.find("content");
    if (!content_parts && content != m.end() && content->is_array()) {
      std::string joined;
      bool first = true;
      for (const ojson& part : *content) {
        if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) continue;
        if (!first) joined += "\n";
        first = false;
        joined += part["text"].get<std::string>();
      }
      *content = joined;
    }
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array()) continue;
    for (ojson& call : *calls) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      ojson& fn = call["function"];
      auto args = fn.find("arguments");
      const bool empty =
          args == fn.end() || args->is_null() || (args->is_string() && args->get_ref<const std::string&>().empty());
      if (argument_strings) {
        if (empty) {
          fn["arguments"] = "{}";
        } else if (args->is_object()) {
          *args = python_json(*args);
        }
      } else if (empty) {
        fn["arguments"] = ojson::object();
      } else if (args->is_string()) {
        ojson parsed = ojson::parse(args->get_ref<const std::string&>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object()) *args = std::move(parsed);
      }
    }
  }
  return out;
}

// Whether template_messages would change anything (most requests: no).
bool needs_rewrite(const ojson& messages, bool content_parts) {
  for (const ojson& m : messages) {
    if (!m.is_object()) continue;
    auto content = m.find("content");
    if (!content_parts && content != m.end() && content->is_array()) return true;
    if (m.contains("tool_calls")) return true;
  }
  return false;
}

// Calls visit(name, value, data) for each template variable, in the order
// where a later one replaces an earlier one of the same name: messages,
// tools, add_generation_prompt, bos_token, eos_token, the kwargs. The
// request's values are data; BOS/EOS text and the flag are the template's
// own (a kwarg of the same name, from the request, is data).
template <typename Visit>
Status visit_variables(const ChatRenderInput& input, bool content_parts, bool argument_strings, Visit&& visit) {
  if (!input.messages.is_array()) return invalid_argument("chat template: messages must be a JSON array");
  if (!input.kwargs.is_null() && !input.kwargs.is_object()) {
    return invalid_argument("chat template: kwargs must be a JSON object");
  }
  LADDER_RETURN_IF_ERROR(check_depth(input.messages, "messages"));
  if (input.tools) LADDER_RETURN_IF_ERROR(check_depth(*input.tools, "tools"));
  LADDER_RETURN_IF_ERROR(check_depth(input.kwargs, "kwargs"));
  if (needs_rewrite(input.messages, content_parts)) {
    visit("messages", template_messages(input.messages, content_parts, argument_strings), true);
  } else {
    visit("messages", input.messages, true);
  }
  if (input.tools) visit("tools", *input.tools, true);
  visit("add_generation_prompt", ojson(input.add_generation_prompt), false);
  visit("bos_token", ojson(input.bos_token), false);
  visit("eos_token", ojson(input.eos_token), false);
  if (input.kwargs.is_object()) {
    for (const auto& [k, v] : input.kwargs.items()) visit(k, v, true);
  }
  return Status::ok();
}

// Renders `messages` (with one tool defined) through `t`: the output, or ""
// when the template refuses them.
std::string probe(const jinja::Template& t, const ojson& messages) {
  ojson tool = ojson::parse(R"({"type": "function", "function": {"name": "probe_tool", "description": "Probe.",
      "parameters": {"type": "object", "properties": {"probe_key": {"type": "string"}}}}})");
  jinja::Dict context;
  context.set(jinja::Value("messages"), jinja::Value::from_json(messages));
  context.set(jinja::Value("tools"), jinja::Value::from_json(ojson::array({tool})));
  context.set(jinja::Value("add_generation_prompt"), jinja::Value(true));
  context.set(jinja::Value("bos_token"), jinja::Value(""));
  context.set(jinja::Value("eos_token"), jinja::Value(""));
  jinja::RenderOptions options;
  options.now = 0;
  Result<jinja::Text> out = t.render(context, options);
  return out.is_ok() ? out->bytes() : std::string();
}

// A template reads content parts when it prints a part's text and not the
// list's Python repr.
bool probe_reads_content_parts(const jinja::Template& t) {
  constexpr const char* kNeedle = "ladder-content-part-probe";
  ojson part = {{"type", "text"}, {"text", kNeedle}};
  std::string out = probe(t, ojson::array({{{"role", "user"}, {"content", ojson::array({part})}}}));
  return out.find(kNeedle) != std::string::npos && out.find("'type'") == std::string::npos;
}

// Arguments stay JSON strings only for a template that cannot print them as
// an object -- it fails on one (concatenating it, as functionary's does) or
// prints the dict's Python repr -- and prints the string as given; templates
// written for Hugging Face take objects, in whatever format they print them.
bool probe_wants_argument_strings(const jinja::Template& t) {
  constexpr const char* kJson = R"({"probe_key": "probe_value"})";
  auto conversation = [](const ojson& arguments) {
    ojson call = {{"id", "call00001"}, {"type", "function"}, {"function", {{"name", "probe_tool"}, {"arguments", arguments}}}};
    return ojson::array({{{"role", "user"}, {"content", "probe"}},
                         {{"role", "assistant"}, {"content", ""}, {"tool_calls", ojson::array({call})}},
                         {{"role", "tool"}, {"tool_call_id", "call00001"}, {"name", "probe_tool"}, {"content", "done"}}});
  };
  std::string as_object = probe(t, conversation(ojson::parse(kJson)));
  if (as_object.find("probe_value") != std::string::npos && as_object.find("{'probe_key'") == std::string::npos) {
    return false;
  }
  return probe(t, conversation(kJson)).find(kJson) != std::string::npos;
}

}  // namespace

Result<ChatRenderInput> ChatRenderInput::from_openai(const ojson& messages, const ojson* tools) {
  if (!messages.is_array()) return bad_field("messages", "must be a list");
  ChatRenderInput in;
  in.messages = messages;
  for (size_t i = 0; i < in.messages.size(); ++i) {
    LADDER_RETURN_IF_ERROR(check_message(in.messages[i], "messages[" + std::to_string(i) + "]"));
  }
  if (tools && !tools->is_null()) {
    LADDER_RETURN_IF_ERROR(check_tools(*tools));
    in.tools = *tools;
  }
  return in;
}

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  LADDER_ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::parse(std::move(source)));
  ChatTemplate ct(std::move(t));
  ct.reads_content_parts_ = probe_reads_content_parts(ct.template_);
  ct.wants_argument_strings_ = probe_wants_argument_strings(ct.template_);
  ct.renders_tools_ = probe(ct.template_, ojson::array({{{"role", "user"}, {"content", "probe"}}}))
                          .find("probe_tool") != std::string::npos;
  return ct;
}

ChatTemplate ChatTemplate::chatml() {
  Result<ChatTemplate> t = parse(kChatMlSource);
  LADDER_CHECK(t.is_ok(), "the built-in ChatML template must parse: " + t.status().to_string());
  return std::move(t).value();
}

Result<ojson> ChatTemplate::context(const ChatRenderInput& input) const {
  ojson context = ojson::object();
  LADDER_RETURN_IF_ERROR(visit_variables(input, reads_content_parts_, wants_argument_strings_,
                                         [&](const std::string& name, const ojson& value, bool) {
                                           context[name] = value;
                                         }));
  return context;
}

Result<jinja::Text> ChatTemplate::render(const ChatRenderInput& input) const {
  jinja::Dict variables;
  LADDER_RETURN_IF_ERROR(visit_variables(input, reads_content_parts_, wants_argument_strings_,
                                         [&](const std::string& name, const ojson& value, bool data) {
                                           variables.set(jinja::Value(name),
                                                         jinja::Value::from_json(value, data ? jinja::Origin::kData
                                                                                             : jinja::Origin::kTemplate));
                                         }));
  jinja::RenderOptions options;
  options.now = input.now;
  return template_.render(variables, options);
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

Result<ChatTemplate> chat_template_for(const gguf::GgufFile& file, const std::string& chosen) {
  if (chosen.empty()) return chat_template_from_gguf(file);
  std::string source;
  std::error_code ec;
  if (std::filesystem::is_regular_file(chosen, ec)) {
    LADDER_ASSIGN_OR_RETURN(source, read_file(chosen));
  } else if (chosen.find("{{") != std::string::npos || chosen.find("{%") != std::string::npos) {
    source = chosen;
  } else {
    return not_found("--chat-template " + chosen + ": no such file (give a Jinja file, or the template text)");
  }
  Result<ChatTemplate> t = ChatTemplate::parse(std::move(source));
  if (!t.is_ok()) return Status(t.status().code(), "--chat-template: " + t.status().message());
  return t;
}

}  // namespace ladder::tokenizer
