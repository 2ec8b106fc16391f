// OpenAI response bodies: whole responses and SSE chunks for /v1/completions
// ("text_completion") and /v1/chat/completions ("chat.completion[.chunk]"),
// with the server's per-request timings in the "ladder" extension field.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/spec_usage.h"
#include "grammar/tool_call_parser.h"

namespace ladder::server {

// kResponses: a chat request presented as the Responses API (ResponsesOutput).
enum class ApiKind { kCompletion, kChat, kResponses };

struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;      // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0; // unix seconds
  std::string model;
  std::string system_fingerprint;  // the serving configuration's ("fp_..."); empty: left out
};

struct UsageInfo {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  engine::SpecUsage speculative;  // ladder_speculative when eligible
};

// Server-side timings of one request (DESIGN.md "Metrics"), milliseconds.
struct ServerTimings {
  std::string tenant;
  double queued_ms = 0;  // arrival -> its prefill started
  double ttft_ms = 0;    // arrival -> first token sampled
  double decode_ms = 0;  // first token -> last token
  double e2e_ms = 0;     // arrival -> last token
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;  // every choice's
  int32_t preemptions = 0;
};

struct TokenLogprobEntry {
  int32_t token = 0;
  bool known = true;  // false: an echoed prompt's first token (its logprob and alternatives are null)
  std::string piece;  // the token's bytes (may be part of a character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // [top_logprobs] (piece, logprob)
};

// What one chunk (or a whole response) carries for its choice.
struct ChoiceDelta {
  std::string content;    // answer text
  std::string reasoning;  // thinking text (chat: reasoning_content)
  std::vector<TokenLogprobEntry> logprobs;
  std::vector<int32_t> token_ids;
  std::vector<grammar::ToolCallDelta> tool_calls;  // streaming: headers and argument fragments
  bool empty() const {
    return content.empty() && reasoning.empty() && logprobs.empty() && token_ids.empty() && tool_calls.empty();
  }
};

// One finished choice of a whole (non-streaming) response.
struct ChoiceResult {
  ChoiceDelta text;                          // content, reasoning, logprobs, token ids
  std::vector<grammar::ToolCall> tool_calls;  // parsed out of the content
  std::string finish_reason;
  nlohmann::json prompt_logprobs;  // vLLM's, when asked for (null: absent)
};

// Which optional parts a response carries.
struct ResponseShape {
  bool logprobs = false;
  bool token_ids = false;      // return_token_ids
  bool include_usage = false;  // stream_options.include_usage
};

nlohmann::json usage_json(const UsageInfo& usage);
nlohmann::json timings_json(const ServerTimings& t);
// Completions form ({tokens, token_logprobs, top_logprobs, text_offset}) or
// chat form ({content: [{token, logprob, bytes, top_logprobs}]}).
nlohmann::json logprobs_json(ApiKind kind, const std::vector<TokenLogprobEntry>& entries, size_t text_offset);

// "data: <json>\n\n"; strings that are not valid UTF-8 (a token piece that is
// part of a character) are written with U+FFFD, never rejected.
std::string sse_data(const nlohmann::json& chunk);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
std::string dump_json(const nlohmann::json& doc);

// Streaming chunks, each for choice `index`. The final chunk of the last
// choice carries the server timings (timings null on the others).
nlohmann::json chat_role_chunk(const ResponseMeta& meta, const ResponseShape& shape, int32_t index);
nlohmann::json delta_chunk(const ResponseMeta& meta, const ChoiceDelta& delta, const ResponseShape& shape,
                           size_t text_offset, int32_t index);
nlohmann::json final_chunk(const ResponseMeta& meta, const std::string& finish_reason, const ServerTimings* timings,
                           const ResponseShape& shape, int32_t index);
nlohmann::json usage_chunk(const ResponseMeta& meta, const UsageInfo& usage);

// A whole (non-streaming) response; choices in index order.
nlohmann::json full_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                             const ResponseShape& shape, const UsageInfo& usage, const ServerTimings& timings);

}  // namespace ladder::server
