#include "server/responses_request.h"

#include "server/json_fields.h"

namespace ladder::server {

using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------------ store

void ResponseStore::remove(std::unordered_map<std::string, Slot>::iterator it) {
  bytes_ -= it->second.bytes;
  order_.erase(it->second.at);
  entries_.erase(it);
}

void ResponseStore::put(const std::string& id, Entry entry) {
  const size_t bytes = id.size() + entry.conversation.dump().size() + entry.response.dump().size();
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) remove(it);
  if (bytes > max_bytes_) return;  // larger than the whole store: not kept
  order_.push_front(id);
  entries_.emplace(id, Slot{std::move(entry), bytes, order_.begin()});
  bytes_ += bytes;
  while (entries_.size() > max_entries_ || bytes_ > max_bytes_) remove(entries_.find(order_.back()));
}

std::optional<ResponseStore::Entry> ResponseStore::get(const std::string& id, int tenant) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.entry.tenant != tenant) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second.at);
  return it->second.entry;
}

bool ResponseStore::erase(const std::string& id, int tenant) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.entry.tenant != tenant) return false;
  remove(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

// ------------------------------------------------------------- requests

namespace {

// A content list's text: input_text / output_text / text parts joined.
std::optional<ApiError> text_of(const ojson& content, const std::string& where, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return invalid_field(where, where + " must be a string or a list of text parts");
  for (const ojson& part : content) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") ||
        !part["text"].is_string()) {
      return invalid_field(where, "only text content parts (input_text, output_text) are supported, got '" + type +
                                      "'");
    }
    *out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

// Input items (Responses form) -> chat messages.
std::optional<ApiError> messages_of(const ojson& items, ojson* messages) {
  for (size_t i = 0; i < items.size(); ++i) {
    const ojson& item = items[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return invalid_field(where, where + " must be an object");
    const std::string type = item.value("type", "message");
    if (type == "message") {
      const std::string role = item.value("role", "");
      if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        return invalid_field(where + ".role", "unknown role '" + role + "'");
      }
      std::string text;
      if (!item.contains("content")) return invalid_field(where + ".content", where + ".content is required");
      LADDER_API_TRY(text_of(item["content"], where + ".content", &text));
      messages->push_back({{"role", role}, {"content", text}});
    } else if (type == "function_call") {
      for (const char* key : {"call_id", "name", "arguments"}) {
        if (!item.contains(key) || !item[key].is_string()) {
          return invalid_field(where + "." + key, where + "." + key + " must be a string");
        }
      }
      ojson call = {{"id", item["call_id"]},
                   {"type", "function"},
                   {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
      // Calls made in one turn are one assistant message.
      if (!messages->empty() && messages->back().value("role", "") == "assistant") {
        ojson& last = messages->back();
        if (!last.contains("tool_calls")) last["tool_calls"] = ojson::array();
        last["tool_calls"].push_back(std::move(call));
      } else {
        messages->push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({call})}});
      }
    } else if (type == "function_call_output") {
      if (!item.contains("call_id") || !item["call_id"].is_string()) {
        return invalid_field(where + ".call_id", where + ".call_id must be a string");
      }
      std::string output;
      if (!item.contains("output")) return invalid_field(where + ".output", where + ".output is required");
      LADDER_API_TRY(text_of(item["output"], where + ".output", &output));
      messages->push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", output}});
    } else if (type == "reasoning") {
      // An earlier turn's thinking, passed back: chat templates leave it out
      // of the prompt, and so does Ladder.
    } else {
      return invalid_field(where + ".type", "input items of type '" + type + "' are not supported");
    }
  }
  return std::nullopt;
}

// tools: function tools, flat as the Responses API writes them -> chat's.
std::optional<ApiError> tools_of(const ojson& tools, ojson* chat_tools) {
  if (!tools.is_array()) return invalid_field("tools", "'tools' must be a list");
  for (const ojson& t : tools) {
    if (!t.is_object() || t.value("type", "") != "function") {
      return invalid_field("tools", "only function tools are supported");
    }
    ojson fn = {{"name", t.value("name", "")}};
    for (const char* key : {"description", "parameters", "strict"}) {
      if (t.contains(key) && !t[key].is_null()) fn[key] = t[key];
    }
    chat_tools->push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_responses_request(std::string_view body, int tenant, ResponseStore& store,
                                                ResponsesRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  ojson& chat = out->chat;
  chat = ojson::object();
  ojson& sk = out->skeleton;
  sk = ojson::object();

  std::string model;
  LADDER_API_TRY(f.string("model", &model));
  if (!model.empty()) chat["model"] = model;

  // The conversation: a stored response's, then this request's input.
  ojson items = ojson::array();
  std::string previous;
  LADDER_API_TRY(f.string("previous_response_id", &previous));
  if (!previous.empty()) {
    std::optional<ResponseStore::Entry> stored = store.get(previous, tenant);
    if (!stored) {
      ApiError e = not_found_error("no stored response '" + previous + "' (responses are kept in memory, up to a "
                                   "bound, for the tenant that made them)",
                                   "previous_response_not_found");
      e.param = "previous_response_id";
      return e;
    }
    items = stored->conversation;
  }
  const ojson* input = f.find("input");
  if (input == nullptr) return invalid_field("input", "'input' is required");
  if (input->is_string()) {
    items.push_back({{"type", "message"}, {"role", "user"}, {"content", input->get<std::string>()}});
  } else if (input->is_array() && !input->empty()) {
    for (const ojson& item : *input) items.push_back(item);
  } else {
    return invalid_field("input", "'input' must be a string or a non-empty list of items");
  }
  ojson messages = ojson::array();
  std::string instructions;
  LADDER_API_TRY(f.string("instructions", &instructions));
  // Instructions belong to this response only: a continuation does not
  // inherit them.
  if (!instructions.empty()) messages.push_back({{"role", "system"}, {"content", instructions}});
  LADDER_API_TRY(messages_of(items, &messages));
  chat["messages"] = std::move(messages);
  out->conversation = items;

  int64_t max_output = 0;
  LADDER_API_TRY(f.integer("max_output_tokens", 1, 1 << 30, &max_output));
  if (max_output > 0) chat["max_tokens"] = max_output;
  for (const char* key : {"temperature", "top_p", "seed", "parallel_tool_calls"}) {
    if (const ojson* v = f.find(key)) chat[key] = *v;
  }
  LADDER_API_TRY(f.boolean("stream", &out->stream));
  chat["stream"] = out->stream;
  LADDER_API_TRY(f.boolean("store", &out->store));
  ojson tools = ojson::array();
  if (const ojson* t = f.find("tools")) {
    ojson chat_tools = ojson::array();
    LADDER_API_TRY(tools_of(*t, &chat_tools));
    if (!chat_tools.empty()) chat["tools"] = std::move(chat_tools);
    tools = *t;
  }
  ojson tool_choice = "auto";
  if (const ojson* c = f.find("tool_choice")) {
    tool_choice = *c;
    if (c->is_object() && c->value("type", "") == "function" && c->contains("name")) {
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    } else if (c->is_string()) {
      chat["tool_choice"] = *c;
    } else {
      return invalid_field("tool_choice", "'tool_choice' must be 'auto', 'none', 'required' or "
                                          "{\"type\": \"function\", \"name\": ...}");
    }
  }
  ojson text = {{"format", {{"type", "text"}}}};
  if (const ojson* t = f.find("text")) {
    if (!t->is_object()) return invalid_field("text", "'text' must be an object");
    Fields tf(*t);
    if (const ojson* format = tf.find("format")) {
      if (!format->is_object() || !format->contains("type")) {
        return invalid_field("text.format", "'text.format' must be an object with a 'type'");
      }
      const std::string type = format->value("type", "");
      if (type == "json_schema") {
        ojson js = {{"name", format->value("name", "response")}, {"schema", format->value("schema", ojson::object())}};
        if (format->contains("strict")) js["strict"] = (*format)["strict"];
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
      } else if (type == "json_object" || type == "text") {
        chat["response_format"] = {{"type", type}};
      } else {
        return invalid_field("text.format.type", "'text.format.type' must be text, json_object or json_schema");
      }
      text["format"] = *format;
    }
    LADDER_API_TRY(tf.leftovers("text"));
  }
  std::string user;
  LADDER_API_TRY(f.string("user", &user));
  LADDER_API_TRY(f.string("safety_identifier", &user));
  if (!user.empty()) chat["user"] = user;
  ojson metadata = nullptr;
  if (const ojson* m = f.find("metadata")) {
    if (!m->is_object() || m->size() > 16) return invalid_field("metadata", "'metadata' must be an object of at most 16 keys");
    metadata = *m;
  }
  // Accepted: they ask for what Ladder does.
  if (const ojson* t = f.find("truncation"); t != nullptr && *t != "disabled") {
    return invalid_field("truncation", "'truncation' must be 'disabled': a prompt over the context is refused");
  }
  if (const ojson* tier = f.find("service_tier"); tier != nullptr && *tier != "auto" && *tier != "default") {
    return invalid_field("service_tier", "Ladder serves one tier: 'service_tier' must be 'auto' or 'default'");
  }
  if (const ojson* key = f.find("prompt_cache_key"); key != nullptr && !key->is_string()) {
    return invalid_field("prompt_cache_key", "'prompt_cache_key' must be a string");
  }
  if (const ojson* inc = f.find("include"); inc != nullptr && !(inc->is_array() && inc->empty())) {
    return invalid_field("include", "'include' asks for output Ladder does not produce (logprobs, sources, "
                                    "encrypted reasoning); send it empty");
  }
  LADDER_API_TRY(f.refused("reasoning", "'reasoning' settings are not supported; use a model whose chat template "
                                        "thinks (its thinking is returned as a reasoning item)"));
  LADDER_API_TRY(f.only_false("background", "background responses are not supported"));
  LADDER_API_TRY(f.refused("conversation", "conversations are not stored; use previous_response_id"));
  LADDER_API_TRY(f.refused("prompt", "prompt templates are not supported"));
  LADDER_API_TRY(f.refused("max_tool_calls", "'max_tool_calls' is not supported"));
  LADDER_API_TRY(f.refused("top_logprobs", "logprobs are not offered by the Responses API here; use chat completions"));
  LADDER_API_TRY(f.leftovers(""));

  // What the response object says of the request.
  sk["instructions"] = instructions.empty() ? ojson(nullptr) : ojson(instructions);
  sk["max_output_tokens"] = max_output > 0 ? ojson(max_output) : ojson(nullptr);
  sk["metadata"] = metadata.is_null() ? ojson::object() : metadata;
  sk["parallel_tool_calls"] = chat.value("parallel_tool_calls", true);
  sk["previous_response_id"] = previous.empty() ? ojson(nullptr) : ojson(previous);
  sk["store"] = out->store;
  sk["temperature"] = chat.contains("temperature") ? chat["temperature"] : ojson(1.0);
  sk["text"] = std::move(text);
  sk["tool_choice"] = std::move(tool_choice);
  sk["tools"] = std::move(tools);
  sk["top_p"] = chat.contains("top_p") ? chat["top_p"] : ojson(1.0);
  sk["truncation"] = "disabled";
  sk["user"] = user.empty() ? ojson(nullptr) : ojson(user);

  out->expanded = doc;
  out->expanded["input"] = items;
  out->expanded.erase("previous_response_id");
  return std::nullopt;
}

}  // namespace ladder::server
