// A workload: the requests a replay sends, in the native JSONL format of
// DESIGN.md ("File formats"), one request a line:
//
//   {"t": 0.25, "tenant": "a", "session": "s1", "turn": 0, "think_s": 1.5,
//    "messages": [{"role": "user", "content": "..."}]   (or "prompt": "...",
//                                                         or "input_tokens": N + "hash_ids": [...])
//    "max_tokens": 32, "slo": {"ttft_ms": 500, "tpot_ms": 50, "e2e_ms": 4000},
//    "slice": "chat", "expect": {"substring": "..."} | {"exact": "..."}, "seed": 7}
//
// Only one of prompt / messages / input_tokens is allowed. A request in a
// session is a closed-loop turn: it is sent when the session's previous turn
// finished plus its think_s (tool time for agents), and its messages are
// appended to the conversation so far (earlier turns plus the replies the
// server actually gave), so the history is a shared prefix as in real chat.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/file_io.h"
#include "common/sha256.h"
#include "common/status.h"

namespace ladder::harness {

// Per-request deadlines; an absent one is not checked.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2e_ms;

  bool empty() const { return !ttft_ms && !tpot_ms && !e2e_ms; }
};

struct Expectation {
  enum class Kind { kExact, kSubstring };
  Kind kind = Kind::kSubstring;
  std::string text;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

struct WorkloadRequest {
  double t = 0.0;  // seconds from the start of the replay (open-loop arrival; first turn of a session)
  std::string tenant = "default";
  std::string session;  // empty: an independent request
  int turn = 0;
  double think_s = 0.0;  // wait after the previous turn of the session finished

  std::string prompt;                 // -> /v1/completions
  std::vector<ChatMessage> messages;  // -> /v1/chat/completions
  int64_t input_tokens = -1;          // synthesized at load time (trace formats)
  std::vector<int64_t> hash_ids;      // shared-prefix block ids for input_tokens

  int max_tokens = 16;
  Slo slo;
  std::string slice = "default";  // is_header_slice_name() for the x-ladder-slice header
  std::optional<Expectation> expect;
  std::optional<uint64_t> seed;  // sent as the request's "seed" (sampling is at temperature 0 anyway)

  int source_line = 0;  // 1-based line in the file it came from (0: generated)

  bool is_chat() const { return !messages.empty(); }
};

// A line the reader could not use, kept so the user sees what was skipped.
struct LineError {
  int line = 0;
  std::string message;
};

struct Workload {
  std::vector<WorkloadRequest> requests;
  std::vector<LineError> skipped;   // malformed lines (empty in --strict mode: they are errors there)
  std::vector<std::string> notes;   // every transformation applied (scaling, caps, windows)
  std::string digest_sha256;        // of the source file's bytes
  std::string source;               // path it came from
  std::string format;               // ladder | mooncake | azure | burstgpt
};

// JSON <-> request. to_json writes only what is set.
nlohmann::json request_to_json(const WorkloadRequest& r);
Result<WorkloadRequest> request_from_json(const nlohmann::json& j);

// Parses native JSONL text. Blank lines and lines starting with '#' are
// ignored; a malformed line is recorded in skipped (or, when strict, returned
// as an error naming its line number).
Result<Workload> parse_native_workload(const std::string& text, bool strict);

// Writes native JSONL (one request a line, trailing newline).
std::string write_native_workload(const std::vector<WorkloadRequest>& requests);

// Whether a slice name can travel in the x-ladder-slice header: 1 to 64
// letters, digits, '_', '-' or '.'. `ladder replay` sends such names; a
// Ladder server accepts only them (and judges shadow verification by them).
bool is_header_slice_name(std::string_view slice);

}  // namespace ladder::harness
