// The Responses API's requests (POST /v1/responses): a Responses body ->
// the chat completions body Ladder plans and runs, plus what the response
// object echoes back. Conversations continue through previous_response_id
// from a bounded in-memory store (ResponseStore), which keeps each stored
// response's whole conversation as Responses input items.
//
// Honoured: input (a string, or message / function_call /
// function_call_output items with text content), instructions,
// max_output_tokens, temperature, top_p, seed, stream, tools (function
// tools), tool_choice, parallel_tool_calls, text.format (text, json_object,
// json_schema), previous_response_id, store, metadata, user /
// safety_identifier. Accepted: truncation "disabled", service_tier "auto" /
// "default", prompt_cache_key, include []. Anything else is a 400 naming it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace ladder::server {

// Stored responses, each with its conversation (input items then output
// items, Responses form), for previous_response_id and GET/DELETE
// /v1/responses/{id}. Bounded in count and in bytes (of the JSON kept): the
// least recently used go first. A tenant sees only its own. Thread-safe.
class ResponseStore {
 public:
  ResponseStore(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  struct Entry {
    int tenant = 0;
    nlohmann::ordered_json conversation;  // input items, then the response's output items
    nlohmann::ordered_json response;      // the response object
  };
  void put(const std::string& id, Entry entry);
  std::optional<Entry> get(const std::string& id, int tenant);
  bool erase(const std::string& id, int tenant);
  size_t size() const;
  size_t bytes() const;

 private:
  struct Slot {
    Entry entry;
    size_t bytes = 0;
    std::list<std::string>::iterator at;  // in order_
  };
  void remove(std::unordered_map<std::string, Slot>::iterator it);  // mu_ held

  size_t max_entries_;
  size_t max_bytes_;
  mutable std::mutex mu_;
  size_t bytes_ = 0;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, Slot> entries_;
};

struct ResponsesRequest {
  // The whole body with previous_response_id's conversation prepended to
  // `input` (as items) and that key removed: what a worker behind `ladder
  // route` is sent, with store false.
  nlohmann::ordered_json expanded;
  // The chat completions body the request amounts to.
  nlohmann::ordered_json chat;
  // The input items of the whole conversation (for the store).
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  // The response object's fields that echo the request (status, output,
  // usage and ids are filled in as it runs).
  nlohmann::ordered_json skeleton;
  bool store = true;
  bool stream = false;
};

// Parses a Responses body for `tenant`; previous_response_id is looked up in
// `store` (404 when it is not there for this tenant). nullopt on success.
std::optional<ApiError> parse_responses_request(std::string_view body, int tenant, ResponseStore& store,
                                                ResponsesRequest* out);

}  // namespace ladder::server
