// ResponsesOutput: one generation's output as the Responses API returns it:
// a response object whose `output` holds a reasoning item (the thinking, when
// the chat template has markers), a message item (the answer text) and one
// function_call item per tool call; streamed as the API's semantic events
// (response.created, response.output_item.added, response.output_text.delta,
// response.function_call_arguments.delta, ... response.completed), each with
// its sequence_number. Fed by ResponseWriter with the same deltas a chat
// completion gets; used on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/http_server.h"
#include "grammar/tool_call_parser.h"
#include "server/openai_response.h"

namespace ladder::server {

// A chat request asked through the Responses API: what its response object
// echoes, and who keeps the finished response (previous_response_id).
struct ResponsesContext {
  nlohmann::ordered_json skeleton;  // ResponsesRequest::skeleton
  // Called once with the final response object of a request that finished;
  // null: nothing is kept.
  std::function<void(const nlohmann::json& response)> on_response;
};

class ResponsesOutput {
 public:
  // skeleton: the fields that echo the request (ResponsesRequest::skeleton).
  ResponsesOutput(const ResponseMeta& meta, const nlohmann::ordered_json& skeleton, bool stream,
                  std::shared_ptr<ResponseChannel> channel);

  // Streaming: the next delta (reasoning, answer text, tool-call fragments).
  void delta(const ChoiceDelta& d);
  // The end: closes what is open and sends response.completed (or
  // .incomplete), or the whole object when not streaming; the final
  // response object goes to `before_sending` (when set) first.
  void finish(const ChoiceResult& result, const UsageInfo& usage, const ServerTimings& timings,
              const std::function<void(const nlohmann::json&)>& before_sending);
  // A failure after the stream began: response.failed.
  void fail(const ApiError& error);
  bool started() const { return started_; }  // the stream's first event went out

 private:
  enum class Item { kNone, kReasoning, kMessage, kCall };
  void event(const std::string& type, nlohmann::json fields);
  void start();
  // Closes the open item and opens the next (a function call's: `call`).
  void open(Item kind, const grammar::ToolCallDelta* call = nullptr);
  // cut_off: the output ended at max_output_tokens inside this item.
  void close(bool cut_off = false);
  nlohmann::json response(const std::string& status) const;

  ResponseMeta meta_;
  nlohmann::json skeleton_;
  bool stream_;
  std::shared_ptr<ResponseChannel> channel_;
  bool started_ = false;
  int64_t sequence_ = 0;
  nlohmann::json output_ = nlohmann::json::array();  // finished items
  Item open_ = Item::kNone;
  nlohmann::json item_;  // the open item
  std::string text_;     // the open item's text or arguments
};

}  // namespace ladder::server
