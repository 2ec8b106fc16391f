// Router: `ladder route`, rung 2's only public endpoint. It speaks the same
// OpenAI API as `ladder serve` and reuses its pieces: the HTTP server, the
// tenants file and API keys, the request builder (chat template, tokenizer,
// bounds, x-ladder-deadline-ms), admission (reservations, priorities,
// deadline feasibility, bounded queue, 429 with Retry-After) and /metrics.
//
// Each admitted request:
//   1. its prompt's block keys (tenant scope, model, tokenizer, KV format)
//      choose a prefill worker and a decode worker (WorkerPool);
//   2. the prefill worker computes the prompt and sends its full blocks
//      straight to the decode worker's KV port (POST /internal/prefill);
//   3. the router forwards the client's request, key and deadline to the
//      decode worker with x-ladder-kv-transfer naming those blocks, and
//      streams its response back byte for byte.
// A prompt with no full block before its last token, or no prefill worker
// answering, goes to the decode worker alone (it computes the prompt; output
// is the same). A decode worker that fails before its response started is
// reported as 502; one that fails mid-stream ends the stream with an error
// event. Either way the worker is marked unhealthy until its /health says
// ready again, and the router serves on.
#pragma once

#include <memory>
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
