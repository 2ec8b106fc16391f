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
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "harness/http_client.h"
#include "harness/request_result.h"
#include "harness/workload.h"

namespace ladder::harness {

struct ReplayOptions {
  Endpoint endpoint;
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
};

// Sends requests (already scheduled: apply_schedule) and measures them.
Result<ReplayRun> run_replay(const std::vector<WorkloadRequest>& requests, const ReplayOptions& opts);

// The request body sent for a request with the given conversation/prompt.
nlohmann::json build_request_body(const WorkloadRequest& r, const std::vector<ChatMessage>& messages,
                                  const std::string& prompt, const std::string& model, bool ignore_eos);

// Prometheus text exposition -> (series with labels as written -> value).
std::map<std::string, double> parse_prometheus_text(const std::string& text);
// The series that looks like a server queue depth (waiting requests), summed
// over its labels; empty name when none is found.
std::pair<std::string, double> find_queue_depth(const std::map<std::string, double>& samples,
                                                const std::string& prefer = "");

// The server as it describes itself: /v1/models and /metrics (what exists).
struct ServerInfo {
  nlohmann::json models;  // null when unavailable
  std::map<std::string, double> metrics;
  bool metrics_available = false;
  std::string model_id;  // first model id
};
ServerInfo probe_server(const Endpoint& ep, const std::string& api_key, double timeout_s);

// Waits until the server answers GET /health with 200 (or, for servers without
// /health, GET /v1/models with 200); a refused connection or a 503 (still
// loading) is retried until wait_s has passed.
Status wait_until_ready(const Endpoint& ep, const std::string& api_key, double wait_s);

}  // namespace ladder::harness
