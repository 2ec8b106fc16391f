// The replay client: sends a scheduled workload to an OpenAI-compatible
// endpoint and measures every request (request_result.h).
//
// Open loop: an independent request, and the first turn of a session, is sent
// at its timestamp whatever is in flight; if the client sends late, the lag
// is recorded per request (send_lag_ms), never hidden. Closed loop: a later
// turn of a session is sent when the previous turn finished plus its think_s,
// with the conversation so far (earlier turns and the replies actually
// received) ahead of its own messages. An optional concurrency cap bounds
// requests in flight; time spent waiting for it is part of the send lag and
// also reported apart (cap_wait_ms).
//
// Every request is sent at temperature 0 (with the workload's seed when it
// has one) and carries its deadline in the x-ladder-deadline-ms header: its
// TTFT SLO, or its E2E SLO when it has no TTFT one (the first token is due
// by then at the latest), so a deadline-aware server can reject early what
// it cannot serve in time. Servers that do not know the header ignore it.
// A request's slice goes in x-ladder-slice (a Ladder server's shadow
// verification judges each slice on its own).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "net/http_client.h"
#include "harness/server_probe.h"
#include "harness/request_result.h"
#include "harness/verifier.h"
#include "harness/workload.h"

namespace ladder::harness {

struct ReplayOptions {
  net::Endpoint endpoint;
  std::string api_key;                            // default key
  std::map<std::string, std::string> tenant_keys;  // tenant -> API key (the server maps keys to tenants)
  std::string model;                              // sent as "model"; empty: the first id of /v1/models
  int concurrency = 0;                            // 0: no cap
  double timeout_s = 300;                         // per network wait
  Slo slo_override;                               // replaces the workload's SLO field by field
  bool ignore_eos = false;                        // send "ignore_eos": true (vLLM-style) so lengths follow the trace
  bool progress = true;                           // a progress line on stderr
  double sample_period_s = 0.25;                  // timeline sampling (in flight, server queue)
  std::string label;                              // printed with progress
  bool send_deadlines = true;                     // x-ladder-deadline-ms from each request's SLO
  bool token_ids = false;                         // ask for output token ids ("return_token_ids")
  int top_logprobs = 0;                           // ask for each position's top-k logprobs (0: none)
  const Verifier* verifier = nullptr;             // null: finish + expectation only
  std::vector<std::string> keys;                  // request_keys of the requests; empty: computed
};

struct TimelineSample {
  double t_s = 0;
  int in_flight = 0;                  // client view: sent and not finished
  std::optional<double> server_queue; // from the server's /metrics, when it exports a queue gauge
};

struct ReplayRun {
  std::vector<RequestResult> results;  // in schedule order
  double window_s = 0;                 // replay start -> last response finished
  double wall_s = 0;
  double client_cpu_s = 0;             // user + system CPU of this process during the run (getrusage)
  double max_send_lag_ms = 0;
  std::vector<TimelineSample> timeline;
  std::string queue_metric;            // the /metrics series read as queue depth, if any
  // The server's process_cpu_seconds_total right before the first request
  // and right after the last response, when its /metrics exports it.
  std::optional<double> server_cpu_before_s;
  std::optional<double> server_cpu_after_s;
  // Of that, a Ladder server's shadow verification (ladder_shadow_core_seconds_total).
  std::optional<double> shadow_cpu_before_s;
  std::optional<double> shadow_cpu_after_s;
};

// Sends requests (already scheduled: apply_schedule) and measures them.
Result<ReplayRun> run_replay(const std::vector<WorkloadRequest>& requests, const ReplayOptions& opts);

// What the request body asks for besides the request itself.
struct BodyOptions {
  bool ignore_eos = false;
  bool token_ids = false;  // "return_token_ids": true (vLLM's name; Ladder serves it)
  int top_logprobs = 0;    // completions: "logprobs": k; chat: "logprobs": true, "top_logprobs": k
};

// The request body sent for a request with the given conversation/prompt.
nlohmann::json build_request_body(const WorkloadRequest& r, const std::vector<ChatMessage>& messages,
                                  const std::string& prompt, const std::string& model, const BodyOptions& extras);

// The deadline a request is sent with: its TTFT SLO, else its E2E SLO.
std::optional<double> deadline_ms_of(const Slo& slo);

}  // namespace ladder::harness
