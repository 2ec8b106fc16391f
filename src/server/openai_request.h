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

// What the output must match: free text, any JSON object, JSON that
// validates against a schema (response_format), or vLLM's and llama.cpp's
// constraints (guided_regex, guided_choice, guided_grammar / grammar).
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema: the schema (keys in the order sent)
  std::string text;               // kRegex: the pattern; kGrammar: GBNF
  std::vector<std::string> choices;  // kChoice: the output is exactly one of these
  std::string param = "response_format";  // the field that set it, for errors
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
  // vLLM's extensions.
  int64_t min_tokens = 0;              // no stop id before this many output tokens
  std::vector<int32_t> stop_token_ids;  // more ids that end the output
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;     // false: special tokens write their text
  std::optional<int64_t> truncate_prompt_tokens;  // keep only the prompt's last k tokens
  int32_t priority = 0;                // lower = earlier, within the tenant's priority
  // The prompt tokens' logprobs with this many alternatives each (vLLM's
  // prompt_logprobs; completions' echo with logprobs asks for them too).
  std::optional<int32_t> prompt_logprobs;
};

inline constexpr int32_t kMaxRequestPriority = 1000;  // |priority|

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
  // A final assistant message is continued, not closed (vLLM's
  // continue_final_message). Absent: continued when the last message is the
  // assistant's with text (as llama.cpp's server does).
  std::optional<bool> continue_final_message;
  bool add_generation_prompt_given = false;
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

// POST /tokenize in vLLM's shapes ({prompt} or {messages, ...}: count,
// max_model_len, tokens[, token_strs]) or llama.cpp's ({content}: tokens, as
// ids or with_pieces {id, piece}).
struct TokenizeRequest {
  std::string model;
  std::string text;                 // prompt / content
  std::optional<ChatRequest> chat;  // messages: rendered as /v1/chat/completions renders them
  // BOS before a text prompt: vLLM's add_special_tokens (default: as
  // /v1/completions adds it) or llama.cpp's add_special (default false).
  std::optional<bool> add_special;
  // Special-token markers in the text are tokens (llama.cpp's parse_special,
  // default true); vLLM's shape tokenizes as /v1/completions does (they are text).
  bool parse_special = false;
  bool token_strs = false;   // vLLM's return_token_strs
  bool with_pieces = false;  // llama.cpp's with_pieces
  bool llama_cpp = false;    // answered in llama.cpp's shape
};

// POST /detokenize: {tokens} -> vLLM's {prompt} and llama.cpp's {content}.
struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

// All return nullopt on success (filling *out) or the 400 to send.
std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest* out);
std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest* out);
std::optional<ApiError> parse_embeddings_request(std::string_view body, EmbeddingsRequest* out);
std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest* out);
std::optional<ApiError> parse_detokenize_request(std::string_view body, DetokenizeRequest* out);

}  // namespace ladder::server
