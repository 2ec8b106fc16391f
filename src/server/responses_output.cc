#include "server/responses_output.h"

#include "server/request_builder.h"

namespace ladder::server {

using json = nlohmann::json;

namespace {

json usage_of(const UsageInfo& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json message_item(const std::string& id, const std::string& text, const char* status) {
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

json call_item(const std::string& id, const std::string& call_id, const std::string& name, const std::string& args,
               const char* status) {
  return {{"type", "function_call"}, {"id", id},     {"call_id", call_id},
          {"name", name},            {"arguments", args}, {"status", status}};
}

}  // namespace

ResponsesOutput::ResponsesOutput(const ResponseMeta& meta, const nlohmann::ordered_json& skeleton, bool stream,
                                 std::shared_ptr<ResponseChannel> channel)
    : meta_(meta), skeleton_(json::parse(skeleton.dump())), stream_(stream), channel_(std::move(channel)) {}

json ResponsesOutput::response(const std::string& status) const {
  json r = {{"id", meta_.id},       {"object", "response"}, {"created_at", meta_.created},
            {"status", status},     {"error", nullptr},     {"incomplete_details", nullptr},
            {"model", meta_.model}, {"output", output_}};
  for (const auto& [key, value] : skeleton_.items()) r[key] = value;
  return r;
}

void ResponsesOutput::event(const std::string& type, json fields) {
  json e = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : fields.items()) e[key] = std::move(value);
  channel_->send("event: " + type + "\n" + sse_data(e));
}

void ResponsesOutput::start() {
  if (started_) return;
  started_ = true;
  channel_->start_stream(200, "text/event-stream", {{"X-Request-Id", meta_.id}});
  event("response.created", {{"response", response("in_progress")}});
  event("response.in_progress", {{"response", response("in_progress")}});
}

void ResponsesOutput::open(Item kind, const grammar::ToolCallDelta* call) {
  close();
  open_ = kind;
  text_.clear();
  const auto index = static_cast<int64_t>(output_.size());
  switch (kind) {
    case Item::kReasoning: item_ = reasoning_item(random_response_id("rs_"), ""); break;
    case Item::kMessage: item_ = message_item(random_response_id("msg_"), "", "in_progress"); break;
    case Item::kCall: item_ = call_item(random_response_id("fc_"), call->id, call->name, "", "in_progress"); break;
    case Item::kNone: return;
  }
  json added = item_;
  if (kind != Item::kCall) added["content"] = json::array();
  event("response.output_item.added", {{"output_index", index}, {"item", added}});
  if (kind == Item::kMessage) {
    event("response.content_part.added",
          {{"item_id", item_["id"]},
           {"output_index", index},
           {"content_index", 0},
           {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
  }
}

void ResponsesOutput::close(bool cut_off) {
  if (open_ == Item::kNone) return;
  const auto index = static_cast<int64_t>(output_.size());
  const json id = item_["id"];
  if (open_ == Item::kMessage) {
    event("response.output_text.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    item_ = message_item(id, text_, cut_off ? "incomplete" : "completed");
    event("response.content_part.done",
          {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", item_["content"][0]}});
  } else if (open_ == Item::kReasoning) {
    event("response.reasoning_text.done",
          {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    item_ = reasoning_item(id, text_);
  } else {
    event("response.function_call_arguments.done", {{"item_id", id}, {"output_index", index}, {"arguments", text_}});
    item_["arguments"] = text_;
    item_["status"] = cut_off ? "incomplete" : "completed";
  }
  event("response.output_item.done", {{"output_index", index}, {"item", item_}});
  output_.push_back(std::move(item_));
  open_ = Item::kNone;
}

void ResponsesOutput::delta(const ChoiceDelta& d) {
  start();
  const auto index = [&] { return static_cast<int64_t>(output_.size()); };
  if (!d.reasoning.empty()) {
    if (open_ != Item::kReasoning) open(Item::kReasoning);
    text_ += d.reasoning;
    event("response.reasoning_text.delta",
          {{"item_id", item_["id"]}, {"output_index", index()}, {"content_index", 0}, {"delta", d.reasoning}});
  }
  if (!d.content.empty()) {
    if (open_ != Item::kMessage) open(Item::kMessage);
    text_ += d.content;
    event("response.output_text.delta", {{"item_id", item_["id"]},
                                         {"output_index", index()},
                                         {"content_index", 0},
                                         {"delta", d.content},
                                         {"logprobs", json::array()}});
  }
  for (const grammar::ToolCallDelta& c : d.tool_calls) {
    // A new call opens its item; its arguments follow as they come.
    if (!c.id.empty()) open(Item::kCall, &c);
    if (!c.arguments.empty()) {
      text_ += c.arguments;
      event("response.function_call_arguments.delta",
            {{"item_id", item_["id"]}, {"output_index", index()}, {"delta", c.arguments}});
    }
  }
}

void ResponsesOutput::finish(const ChoiceResult& result, const UsageInfo& usage, const ServerTimings& timings,
                             const std::function<void(const json&)>& before_sending) {
  const bool cut_off = result.finish_reason == "length";
  if (stream_) {
    start();
    close(cut_off);
  } else {
    // The whole output at once, in the order it was generated.
    if (!result.text.reasoning.empty()) output_.push_back(reasoning_item(random_response_id("rs_"), result.text.reasoning));
    if (!result.text.content.empty() || result.tool_calls.empty()) {
      output_.push_back(message_item(random_response_id("msg_"), result.text.content, cut_off ? "incomplete" : "completed"));
    }
    for (const grammar::ToolCall& call : result.tool_calls) {
      output_.push_back(call_item(random_response_id("fc_"), call.id, call.name, call.arguments, "completed"));
    }
  }
  json r = response(cut_off ? "incomplete" : "completed");
  if (cut_off) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  r["usage"] = usage_of(usage);
  r["ladder"] = timings_json(timings);
  // Kept before the client can see it end, so that its next request finds it.
  if (before_sending) before_sending(r);
  if (stream_) {
    event(cut_off ? "response.incomplete" : "response.completed", {{"response", r}});
    channel_->finish();
  } else {
    HttpResponse http;
    http.body = dump_json(r);
    channel_->respond(std::move(http));
  }
}

void ResponsesOutput::fail(const ApiError& error) {
  json r = response("failed");
  r["error"] = {{"code", error.code}, {"message", error.message}};
  event("response.failed", {{"response", r}});
  channel_->finish();
}

}  // namespace ladder::server
