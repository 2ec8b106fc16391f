// What the replay client measured for one request (client clock; DESIGN.md
// "Metrics"): all times are milliseconds from the moment the request was
// sent, except scheduled_s / sent_s (seconds from the replay's start).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/quality.h"
#include "harness/token_logprob.h"
#include "harness/workload.h"

namespace ladder::harness {

// Speculative decoding as the server's usage reports it: the OpenAI fields
// (completion_tokens_details) and Ladder's extension (usage.ladder_speculative).
struct SpeculativeUsage {
  std::optional<int64_t> accepted_prediction_tokens;
  std::optional<int64_t> rejected_prediction_tokens;
  std::optional<int64_t> proposed;  // draft tokens proposed
  std::optional<int64_t> accepted;  // draft tokens the target accepted
  std::optional<int64_t> cycles;    // target verification passes
};

struct RequestResult {
  size_t index = 0;  // position in the scheduled workload
  int source_line = 0;  // line of the workload file it came from (0: generated)
  std::string tenant = "default";
  std::string slice = "default";
  std::string session;
  int turn = 0;
  Slo slo;

  double scheduled_s = 0.0;  // when the schedule said to send it
  double sent_s = 0.0;       // when it was actually sent
  double send_lag_ms = 0.0;  // sent - scheduled: a late send is reported, never hidden
  double cap_wait_ms = 0.0;  // part of the lag spent waiting for the concurrency cap

  int http_status = 0;  // 0: no HTTP response (connect/transport failure)
  std::string error;    // transport error, HTTP error body, or an SSE error event
  std::string error_code;  // error.code of an OpenAI-style error body, when it has one
  std::string finish_reason;
  std::optional<double> deadline_ms;  // sent as x-ladder-deadline-ms (from the SLO)

  std::optional<double> ttft_ms;   // first output token of any kind
  std::optional<double> ttfat_ms;  // first answer (non-reasoning) token
  std::optional<double> tpot_ms;   // (e2e - ttft) / (output_tokens - 1), when output_tokens >= 2
  double e2e_ms = 0.0;             // sent -> last byte
  std::vector<double> itl_ms;      // gaps between successive token-carrying chunks

  int64_t output_tokens = -1;  // from usage; -1 when the server sent none
  int64_t prompt_tokens = -1;  // from usage
  int64_t sse_events = 0;      // data events, [DONE] excluded
  int64_t token_chunks = 0;    // events that carried text (reported apart from usage)
  size_t prompt_chars = 0;     // characters sent (history included), for the chars/token check

  std::string text;            // the answer
  std::string reasoning_text;  // reasoning_content, if the server separates it
  bool has_token_ids = false;  // the server sent token_ids (return_token_ids)
  std::vector<int64_t> token_ids;       // output token ids, in order
  std::vector<TokenLogprob> logprobs;   // one per output token, when asked for
  SpeculativeUsage speculative;

  std::string key;            // identity of the workload request (reference.h)
  std::string prompt_sha256;  // of the prompt or messages actually sent (history included)
  std::optional<QualityCheck> quality;  // against the reference, when replaying with one

  bool verified = false;
  std::string verify_note;  // why not, or which expectation matched

  nlohmann::json server_timings;  // the server's own per-request timings ("ladder" extension), if sent
};

// Verification (DESIGN.md): finished without error, with finish_reason stop or
// length, and the expectation (exact after trimming whitespace, or substring)
// matched where there is one. Sets verified and verify_note.
void verify_result(RequestResult& r, const std::optional<Expectation>& expect);

// The expectation alone (exact after trimming whitespace, or substring).
bool expectation_met(const std::string& text, const Expectation& expect);

// Per-SLO verdicts. A missing TTFT fails a TTFT SLO; TPOT is undefined with
// fewer than 2 output tokens and then passes (there is no inter-token time);
// without usage it fails (output tokens are never guessed from chunks).
struct SloVerdict {
  bool ttft = true;
  bool tpot = true;
  bool e2e = true;
  bool all() const { return ttft && tpot && e2e; }
};
SloVerdict check_slo(const RequestResult& r);

// Goodput counts it: verified and within every SLO.
inline bool is_good(const RequestResult& r) { return r.verified && check_slo(r).all(); }

// How a request ended, one of:
//   good            verified and within every SLO
//   late            served and verified, but an SLO was missed
//   unverified      served (HTTP 200), but not verified
//   rejected_early  HTTP 429 at admission: the server declined rather than
//                   serve late (deadline_infeasible, queue_full,
//                   tenant_queue_full, rate_limited; any other 429 code too)
//   expired         HTTP 429 deadline_exceeded: dropped from the server's
//                   queue when its deadline passed
//   error           anything else: no response, another HTTP error, a broken stream
enum class Outcome { kGood, kLate, kUnverified, kRejectedEarly, kExpired, kError };
const char* outcome_name(Outcome o);
Outcome outcome_of(const RequestResult& r);

}  // namespace ladder::harness
