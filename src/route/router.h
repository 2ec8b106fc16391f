// Router: `ladder route`, rung 2's only public endpoint. The same Frontend
// as `ladder serve` (the OpenAI API, tenants and keys, planning, SLO
// judgement, /metrics, drain; server/frontend.h) in front of a RelayBackend
// that places each request on a prefill and a decode worker and relays it
// (route/relay_backend.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/http_server.h"

namespace ladder::route {

struct RouterConfig {
  std::string model_path;         // the workers' GGUF: its tokenizer and chat template
  std::string served_model_name;  // default: the file name without .gguf
  std::string tenants_file;
  std::string api_key;
  std::string admin_key;
  server::HttpServerConfig http;
  // A second listener that serves only /metrics, keyless and per tenant (for
  // a private network). Unset: none.
  std::optional<uint16_t> metrics_port;
  std::string metrics_host = "127.0.0.1";
  std::vector<std::string> prefill_urls;
  std::vector<std::string> decode_urls;
  int32_t max_queue = 256;
  double initial_service_ms = 1000;
  int prepare_threads = 2;
  size_t max_pending_prepare = 1024;
  double probe_period_s = 1;
  double worker_timeout_s = 60;  // per network wait on a worker
  double drain_grace_s = 30;
};

class Router {
 public:
  explicit Router(RouterConfig config);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Reads the tenants and the model's tokenizer, listens (/health says
  // "loading"), and starts probing the workers.
  Status start();
  uint16_t port() const;
  // Waits until every worker answered ready and all agree on the model (then
  // the router is ready), or until timeout_s (the reason).
  Status wait_for_workers(double timeout_s);
  // SIGTERM: stop taking requests, let the running ones finish.
  void drain();
  void wait();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ladder::route
