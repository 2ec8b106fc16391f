// OpenAI request bodies -> typed requests, validated field by field. Every
// rejection names the offending field (ApiError::param), so a 400 tells the
// client exactly what to fix. A parameter Ladder does not honour is refused
// with a 400 naming it, never silently ignored: each endpoint lists the keys
// it reads, and any other key in the body is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling_params.h"
#include "server/api_error.h"

namespace ladder::server {

// response_format: free text, any JSON object, or JSON that validates against
// a schema.
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: json_schema.schema (keys in the order sent)
};

// tool_choice, when tools are given.
struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string function;  // kFunction
};

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
  bool return_token_ids = false;       // vLLM extension: each choice carries its output token ids
  bool echo = false;                   // completions: each choice's text begins with its prompt
  std::string user;                    // user / safety_identifier: an opaque id for the access log
  int32_t n = 1;                       // choices to generate from the one prompt
  ResponseFormat response_format;
};

inline constexpr int32_t kMaxChoices = 16;
inline constexpr size_t kMaxLogitBiasEntries = 1024;

struct CompletionRequest {
  GenerationOptions options;
  struct Prompt {
    std::string text;                             // when given as text
    std::optional<std::vector<int32_t>> tokens;  // when given as token ids
  };
  // One or more (a list of prompts: n choices each, in prompt order).
  std::vector<Prompt> prompts;
};

struct ChatRequest {
  GenerationOptions options;
  // [{role, content, ...}] as the chat template sees them: content is a
  // string (text parts joined) or null; key order is kept.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  bool add_generation_prompt = true;
  // chat_template_kwargs (vLLM's name): more template variables, e.g.
  // enable_thinking.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  // `tools` as sent (the chat template renders them); absent: no tools.
  std::optional<nlohmann::ordered_json> tools;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
};

// /v1/embeddings: one or more inputs, each text or token ids.
struct EmbeddingsRequest {
  std::string model;
  struct Input {
    std::string text;
    std::optional<std::vector<int32_t>> tokens;
  };
  std::vector<Input> inputs;
  bool base64 = false;  // encoding_format "base64": little-endian float32 bytes
  std::optional<int64_t> dimensions;  // must equal the model's width when given
  std::string user;
};
inline constexpr size_t kMaxEmbeddingInputs = 256;

// All return nullopt on success (filling *out) or the 400 to send.
std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest* out);
std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest* out);
std::optional<ApiError> parse_embeddings_request(std::string_view body, EmbeddingsRequest* out);

}  // namespace ladder::server
