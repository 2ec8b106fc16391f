// OpenAI request bodies -> typed requests, validated field by field. Every
// rejection names the offending field (ApiError::param), so a 400 tells the
// client exactly what to fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling_params.h"
#include "server/api_error.h"

namespace ladder::server {

inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopLength = 256;

// What both endpoints share: sampling, stopping, streaming.
struct GenerationOptions {
  std::string model;                   // as sent; empty when omitted
  std::optional<int64_t> max_tokens;   // max_tokens or max_completion_tokens
  engine::SamplingParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  bool logprobs = false;               // report the chosen token's logprob
  bool ignore_eos = false;             // vLLM extension: generate max_tokens whatever the model says
  std::string user;
};

struct CompletionRequest {
  GenerationOptions options;
  std::string prompt;                       // text, when given as text
  std::optional<std::vector<int32_t>> prompt_tokens;  // when given as token ids
};

struct ChatMessage {
  std::string role;     // system, developer, user, assistant, tool
  std::string content;  // text parts joined
};

struct ChatRequest {
  GenerationOptions options;
  std::vector<ChatMessage> messages;
};

// Both return nullopt on success (filling *out) or the 400 to send.
std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest* out);
std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest* out);

}  // namespace ladder::server
