// RelayBackend: the Frontend's backend for `ladder route` (rung 2): no model
// runs here; each planned request is placed on workers and relayed.
//
// Each admitted request:
//   1. its prompt's block keys (tenant scope, model, tokenizer, KV format)
//      choose a prefill worker and a decode worker (WorkerPool);
//   2. the prefill worker computes the prompt and sends its full blocks
//      straight to the decode worker's KV port (POST /internal/prefill);
//   3. the client's request, key and remaining deadline go to the decode
//      worker with x-ladder-kv-transfer naming those blocks, and its response
//      is streamed back byte for byte. The worker's final "ladder" block
//      (tokens, its TTFT) is what the request is recorded with.
// A prompt with no full block before its last token, or no prefill worker
// answering, goes to the decode worker alone (it computes the prompt; output
// is the same). A decode worker that fails before its response started is
// reported as 502; one that fails mid-stream ends the stream with an error
// event. Either way the worker is marked unhealthy until its /health says
// ready again, and the router serves on.
//
// Admission is the router's own (AdmissionController over the decode
// workers' running slots): reservations, priorities, deadline feasibility,
// a bounded queue, 429 with Retry-After.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/admission.h"
#include "gguf/gguf_file.h"
#include "route/prefill_policy.h"
#include "route/worker_pool.h"
#include "server/frontend.h"
#include "server/work_queue.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ladder::route {

// `ladder route`'s settings: the frontend's and the relay's.
struct RouterConfig {
  std::string model_path;         // the workers' GGUF: its tokenizer and chat template
  // A Jinja chat template instead of the model's (the workers' --chat-template).
  std::string chat_template;
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
  // Where prompts are computed (PrefillPolicy).
  PrefillMode prefill_mode = PrefillMode::kMeasured;
  // The policy's TPOT objective in ms; 0: the tightest tenant slo.tpot_ms
  // (none when no tenant sets one).
  double tpot_ms = 0;
};

// What the router adds to /metrics besides the frontend's series.
struct RelayCounters {
  std::atomic<uint64_t> prefill_fallbacks{0};
  std::atomic<uint64_t> transfers{0};
  std::atomic<uint64_t> transfer_blocks{0};
  std::atomic<uint64_t> transfer_bytes{0};
  std::atomic<uint64_t> transfer_micros{0};
  std::atomic<uint64_t> prefill_micros{0};
  std::atomic<uint64_t> affinity_blocks_prefill{0};
  std::atomic<uint64_t> affinity_blocks_decode{0};
  std::atomic<uint64_t> failures_prefill{0};
  std::atomic<uint64_t> failures_decode{0};
};

class RelayBackend : public server::Backend {
 public:
  // `config` and `tenants` outlive the backend.
  RelayBackend(const RouterConfig& config, const server::TenantRegistry& tenants);
  ~RelayBackend() override;

  // Reads the model's tokenizer and chat template (the router plans requests
  // as the workers do) and starts probing the workers.
  Status open();
  // Every worker answered ready at least once and all agree (WorkerPool).
  Status workers_ready() const { return pool_->check_ready(); }
  // The workers serve the model file's weights and tokenizer (an error names
  // what differs): planning and admission start.
  Status start_serving();

  const char* role() const override { return "router"; }
  const server::RequestBuilder* builder() const override;
  void serve(server::GenerationPlan plan, const server::HttpRequest& http,
             std::shared_ptr<server::ResponseChannel> channel, server::SettledFn settled) override;
  server::HttpResponse embed(const server::EmbeddingsRequest& request, const server::HttpRequest& http,
                             server::RequestRecord* record) override;
  void describe_health(server::ServerState state, nlohmann::json& doc) const override;
  int64_t context_length() const override { return pool_->context_length(); }
  nlohmann::json model_facts() const override;
  void fill_gauges(server::GaugeSnapshot& gauges) const override;
  std::string extra_metrics() const override;
  void cancel_all() override;
  std::string stop() override;

  struct Call;

 private:
  void admit(const std::shared_ptr<Call>& call);
  void relay(const std::shared_ptr<Call>& call);
  // Phase 1 (when the policy says remote): the prompt computed on a prefill
  // worker, its KV sent to the decode worker. The transfer id to name (empty:
  // none) and the round trip's ms, or nullopt when the call ended here (the
  // prefill worker's own refusal, no decode worker left).
  struct RemotePrefill {
    std::string transfer_id;
    double round_trip_ms = -1;  // < 0: the decode worker computes the prompt
  };
  std::optional<RemotePrefill> prefill_remotely(const std::shared_ptr<Call>& call,
                                                const std::vector<kv::BlockKey>& keys,
                                                std::optional<Placement>& decode, server::RequestRecord& rec);
  // Phase 2: the request relayed to the decode worker and its response back.
  // The worker's own prompt time (its TTFT less its queue time) in ms, or -1.
  double relay_decode(const std::shared_ptr<Call>& call, const Placement& decode, const std::string& transfer_id,
                      server::RequestRecord& rec);
  PrefillDecision decide_prefill(bool no_full_block, int64_t n_local, int64_t n_remote,
                                 const WorkerPool::PrefillAvailability& prefill, const Placement& decode);
  // Ends a call that never reached a worker's response (refused, expired,
  // withdrawn, failed placement).
  void end_early(const std::shared_ptr<Call>& call, const server::ApiError& e, bool was_running);
  // A relayed call is over: its slot goes to whoever waits.
  void finish_call(const std::shared_ptr<Call>& call, server::RequestRecord rec, int64_t tokens);
  void start_relays(std::vector<std::shared_ptr<Call>> calls);
  void expire_waiting();

  const RouterConfig& config_;
  const server::TenantRegistry& tenants_;
  RelayCounters counters_;
  std::optional<gguf::GgufFile> file_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::optional<tokenizer::ChatTemplate> chat_template_;
  std::unique_ptr<server::Planner> planner_;
  std::atomic<const server::RequestBuilder*> builder_{nullptr};
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<server::WorkQueue> relays_;
  std::atomic<bool> cancelled_{false};

  // Where prompts are computed (conditional disaggregation) and why.
  mutable std::mutex policy_mu_;
  PrefillPolicy policy_;
  double tpot_objective_ms_ = 0;  // what policy_ was given (0: none)
  std::map<size_t, ArrivalRate> decode_arrivals_;  // by decode worker index
  std::map<std::pair<std::string, std::string>, uint64_t> decisions_;  // (where, reason) -> requests

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<engine::AdmissionController> admission_;  // set when ready
  std::map<uint64_t, std::shared_ptr<Call>> waiting_;
  int64_t relaying_ = 0;
  bool stopping_ = false;
  std::thread prober_;  // probes the workers, expires queued calls
};

}  // namespace ladder::route
