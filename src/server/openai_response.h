// OpenAI response bodies: whole responses and SSE chunks for /v1/completions
// ("text_completion") and /v1/chat/completions ("chat.completion[.chunk]"),
// with the server's per-request timings in the "ladder" extension field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/text_stream.h"

namespace ladder::server {

enum class ApiKind { kCompletion, kChat };

struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;      // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0; // unix seconds
  std::string model;
};

struct UsageInfo {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
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
  int32_t preemptions = 0;
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

// Streaming chunks.
nlohmann::json chat_role_chunk(const ResponseMeta& meta, bool include_usage);
nlohmann::json delta_chunk(const ResponseMeta& meta, const TextDelta& delta, bool want_logprobs, size_t text_offset,
                           bool include_usage);
nlohmann::json final_chunk(const ResponseMeta& meta, const std::string& finish_reason, const ServerTimings& timings,
                           bool include_usage);
nlohmann::json usage_chunk(const ResponseMeta& meta, const UsageInfo& usage);

// A whole (non-streaming) response.
nlohmann::json full_response(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                             const std::vector<TokenLogprobEntry>* logprobs, const UsageInfo& usage,
                             const ServerTimings& timings);

}  // namespace ladder::server
