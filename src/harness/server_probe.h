// The server as an HTTP client sees it: /v1/models (the served model, its
// context length and, from a Ladder server, its identity and effective
// configuration), /metrics (Prometheus text: queue depth, the process's CPU
// seconds) and readiness. Works against any OpenAI-compatible server; what a
// server does not publish is simply absent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "net/http_client.h"

namespace ladder::harness {

// Prometheus text exposition -> (series with labels as written -> value).
std::map<std::string, double> parse_prometheus_text(const std::string& text);
// The series that looks like a server queue depth (waiting requests), summed
// over its labels; empty name when none is found.
std::pair<std::string, double> find_queue_depth(const std::map<std::string, double>& samples,
                                                const std::string& prefer = "");
// The standard process_cpu_seconds_total (user + system CPU seconds of the
// server process), when exported.
std::optional<double> process_cpu_seconds(const std::map<std::string, double>& samples);
// A Ladder server's shadow verification core-seconds
// (ladder_shadow_core_seconds_total), when it runs one.
std::optional<double> shadow_cpu_seconds(const std::map<std::string, double>& samples);

struct ServerInfo {
  nlohmann::json models;  // the whole /v1/models answer; null when unavailable
  std::map<std::string, double> metrics;
  bool metrics_available = false;
  std::string model_id;  // first model id

  // The /v1/models entry of `id` (the first entry when id is empty or not
  // listed); null when there is none.
  nlohmann::json model_entry(const std::string& id) const;
};
ServerInfo probe_server(const net::Endpoint& ep, const std::string& api_key, double timeout_s);

// The served model's context length: /v1/models data[i].max_model_len (vLLM,
// Ladder) or data[i].meta.n_ctx_train (llama.cpp).
Result<int64_t> served_context_length(const ServerInfo& info, const std::string& model_id);

// Waits until the server answers GET /health with 200 (or, for servers without
// /health, GET /v1/models with 200); a refused connection or a 503 (still
// loading) is retried until wait_s has passed.
Status wait_until_ready(const net::Endpoint& ep, const std::string& api_key, double wait_s);

}  // namespace ladder::harness
