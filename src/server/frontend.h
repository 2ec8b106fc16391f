// Frontend: the one OpenAI-compatible front door of `ladder serve` and
// `ladder route`. Everything a client meets before its request reaches
// compute lives here, once:
//   routes            /health, /metrics, /version, /v1/models[/{id}],
//                     /v1/completions, /v1/chat/completions, /v1/embeddings,
//                     /v1/responses[/{id}], /tokenize, /detokenize (+ a
//                     backend's own)
//   tenants and keys  the tenants file or --api-key; admin keys for /metrics
//   planning          the request is parsed and planned once (RequestBuilder)
//                     on the prepare threads, off the io threads
//   SLO judgement     a finished request met its SLO when its first token was
//                     due by its deadline and its TPOT within the tenant's
//   metrics and log   every request settles into ServerMetrics and one
//                     access-log line
//   life cycle        loading -> ready -> draining -> stopped; the drain waits
//                     for every accepted request, cancels after the grace
//                     period and stops once the error endings went out
//
// Behind it, a Backend runs the planned request: LocalBackend (an engine in
// this process, `ladder serve`) or RelayBackend (prefill and decode workers,
// `ladder route`). A backend answers the response channel itself and reports
// the request's record once it settled (delivered, failed or abandoned).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_builder.h"
#include "server/responses_request.h"
#include "server/server_state.h"
#include "server/tenants.h"
#include "server/work_queue.h"

namespace ladder::server {

struct EmbeddingsRequest;

struct FrontendConfig {
  std::string served_model_name;  // the name clients use (also the model path)
  std::string model_path;
  std::string tenants_file;  // empty: one anonymous tenant (or --api-key's)
  std::string api_key;       // one tenant with this key (no tenants file)
  std::string admin_key;     // may read per-tenant /metrics
  HttpServerConfig http;
  // A second listener that serves only /metrics, with per-tenant figures
  // (for a private network). Unset: none.
  std::optional<uint16_t> metrics_port;
  std::string metrics_host = "127.0.0.1";
  int prepare_threads = 2;            // planning (templating, tokenizing) off the io threads
  size_t max_pending_prepare = 1024;  // requests waiting to be planned
  double drain_grace_s = 30;
};

// The frontend part of a command's settings (ServeConfig, RouterConfig: any
// with these fields).
template <class Config>
FrontendConfig frontend_config_of(const Config& c) {
  FrontendConfig f;
  f.served_model_name = c.served_model_name;
  f.model_path = c.model_path;
  f.tenants_file = c.tenants_file;
  f.api_key = c.api_key;
  f.admin_key = c.admin_key;
  f.http = c.http;
  f.metrics_port = c.metrics_port;
  f.metrics_host = c.metrics_host;
  f.prepare_threads = c.prepare_threads;
  f.max_pending_prepare = c.max_pending_prepare;
  f.drain_grace_s = c.drain_grace_s;
  return f;
}

// The name clients use: `name`, or the model file's name without .gguf.
std::string served_name_or_stem(const std::string& name, const std::string& model_path);

// Called once when a request settled, with what the backend measured. The
// frontend judges the SLO, records the metrics, logs and lets the request go.
using SettledFn = std::function<void(RequestRecord)>;

class Backend {
 public:
  virtual ~Backend() = default;
  // /health's "role": both, prefill, decode or router.
  virtual const char* role() const = 0;
  // The planner of this backend's model; null while it is not ready.
  virtual const RequestBuilder* builder() const = 0;
  // Runs a planned generation request and answers `channel`; `settled`
  // exactly once. `http` is the client's request (headers a backend honours).
  virtual void serve(GenerationPlan plan, const HttpRequest& http, std::shared_ptr<ResponseChannel> channel,
                     SettledFn settled) = 0;
  // Computes embeddings: the response to send; `record` gets the token count.
  virtual HttpResponse embed(const EmbeddingsRequest& request, const HttpRequest& http, RequestRecord* record) = 0;

  // What /health, /v1/models and /metrics add (called when ready unless said).
  // Fields of /health's body; called in every state.
  virtual void describe_health(ServerState state, nlohmann::json& doc) const = 0;
  virtual int64_t context_length() const = 0;  // /v1/models' max_model_len
  virtual nlohmann::json model_facts() const = 0;  // /v1/models' "ladder" block
  virtual void fill_gauges(GaugeSnapshot& gauges) const = 0;  // in every state
  virtual std::string extra_metrics() const { return {}; }

  // A route of the backend's own (a prefill worker's /internal/prefill).
  // serve_route must call `done` once the request is answered.
  virtual bool owns_route(const std::string& /*path*/) const { return false; }
  virtual void serve_route(const HttpRequest& /*http*/, std::shared_ptr<ResponseChannel> /*channel*/,
                           std::function<void()> /*done*/) {}

  // The drain's grace is spent: end whatever still runs (with an error).
  virtual void cancel_all() = 0;
  // The frontend stops: requests still unsettled are abandoned, then
  // everything the backend runs stops. Returns a line for the stop log.
  virtual std::string stop() = 0;
};

class Frontend {
 public:
  explicit Frontend(FrontendConfig config);
  ~Frontend();
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  // Reads the tenants (an error for a bad file); call before start().
  Status load_tenants();
  const TenantRegistry& tenants() const { return tenants_; }
  // Listens (/health says "loading") with `backend` behind (it outlives the
  // frontend's stop).
  Status start(Backend* backend);
  // The backend can serve: ready (unless a drain began meanwhile).
  void set_ready();
  bool ready() const { return state_.load() == ServerState::kReady; }
  uint16_t port() const;
  uint16_t metrics_port() const;

  // Begins the drain (idempotent); SIGTERM and SIGINT call it.
  void drain();
  // Blocks until the drain finished, then stops the listeners, the prepare
  // threads and the backend.
  void wait();
  // Stops everything now (a server destroyed without a drain).
  void stop_now();

 private:
  void handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch);
  // The checks every model endpoint shares (ready, API key), then `work` on a
  // prepare thread with the tenant; counted live until `work` settles it.
  using PreparedWork = std::function<void(const HttpRequest&, int, std::shared_ptr<ResponseChannel>)>;
  void accept_model_request(HttpRequest req, std::shared_ptr<ResponseChannel> ch, PreparedWork work);
  void plan_and_serve(ApiKind kind, const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  // POST /v1/responses: planned as the chat request it amounts to.
  void plan_response(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  // GET or DELETE /v1/responses/{id}.
  HttpResponse stored_response(const std::string& method, const std::string& id, int tenant);
  // Hands a plan to the backend; the settlement records it.
  void serve_plan(GenerationPlan plan, const HttpRequest& req, std::shared_ptr<ResponseChannel> ch);
  void embed(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  // POST /tokenize (to_ids) and /detokenize, with the model's tokenizer and
  // chat template.
  void convert_tokens(bool to_ids, const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  // The request ended before reaching the backend: recorded, answered, let go.
  void reply_error(const std::shared_ptr<ResponseChannel>& ch, int tenant, const ApiError& e, bool was_live);
  void settle(const GenerationPlan& plan, RequestRecord rec);
  HttpResponse health() const;
  nlohmann::json model_entry() const;  // null before ready
  HttpResponse models(const std::string& path) const;
  HttpResponse metrics_page(bool per_tenant) const;
  void add_live(int64_t n);
  void check_drain();

  FrontendConfig config_;
  Backend* backend_ = nullptr;
  TenantRegistry tenants_ = TenantRegistry::anonymous();
  ServerMetrics metrics_;
  std::atomic<ServerState> state_{ServerState::kLoading};
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> metrics_http_;
  std::unique_ptr<WorkQueue> prepare_;
  int64_t started_unix_ = 0;  // /v1/models' "created" (unix seconds)
  // Finished Responses API responses (previous_response_id); shared with
  // the callbacks that fill it.
  std::shared_ptr<ResponseStore> stored_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t live_ = 0;  // accepted requests not yet settled; the drain waits for them
  std::chrono::steady_clock::time_point drain_started_;
  bool grace_spent_ = false;
  bool finished_ = false;
};

// Whether a finished request met its SLO: its first token came by the plan's
// deadline (which defaults to the tenant's TTFT target) and its time per
// output token stayed within the tenant's TPOT target.
bool meets_slo(const RequestRecord& rec, const GenerationPlan& plan, const TenantSlo& slo);

}  // namespace ladder::server
