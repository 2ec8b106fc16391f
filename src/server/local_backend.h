// LocalBackend: the Frontend's backend for `ladder serve`: a model and its
// engine in this process.
//   Planner           JSON -> an immutable GenerationPlan (template, tokens)
//   Engine            admission, bounds, scheduling, the model (src/engine)
//   Exchange          one request from plan to last byte; cancels on hang-up
//   Embedder          /v1/embeddings
// and, for rung 2's worker roles, the KV link: a decode worker's inbox and
// listener (x-ladder-kv-transfer names the blocks a request imports), a
// prefill worker's POST /internal/prefill (PrefillService).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "engine/draft.h"
#include "engine/engine.h"
#include "server/exchange.h"
#include "server/frontend.h"
#include "server/kv_link.h"
#include "server/prefill_service.h"
#include "server/shadow.h"

namespace ladder::server {

// Rung 2: a worker that only computes prompts and ships their KV (prefill),
// one that takes shipped KV and generates (decode), or both in one server.
enum class ServeRole { kBoth, kPrefill, kDecode };
const char* serve_role_name(ServeRole role);

// `ladder serve`'s settings: the frontend's and the local backend's.
struct ServeConfig {
  std::string model_path;
  std::string served_model_name;  // default: the file name without .gguf
  std::string tenants_file;       // empty: one anonymous tenant (or --api-key's)
  std::string api_key;            // one tenant with this key (no tenants file)
  std::string admin_key;          // may read per-tenant /metrics
  // A chat template that does not render `tools` gets a tools preamble in
  // the system message (grammar::tool_preamble); false: tools reach the
  // model only through forced calls' grammar (tool_choice required/function).
  bool tool_preamble = true;
  // A Jinja chat template instead of the model's (a file or the text; empty:
  // the model's).
  std::string chat_template;
  // auto, none, deepseek_r1 or qwen3 (PlannerOptions::reasoning_parser).
  std::string reasoning_parser = "auto";
  HttpServerConfig http;
  // A second listener that serves only /metrics, with per-tenant figures
  // (for a private network). Unset: none.
  std::optional<uint16_t> metrics_port;
  std::string metrics_host = "127.0.0.1";
  // The engine: KV cache, scheduler, request bounds, admission. The server
  // fills in the model digests, tokenizer and tenants.
  engine::EngineConfig engine;
  // Speculative decoding (--spec): the draft is built at load(), beside the
  // model; engine.speculative carries k and whether it adapts.
  engine::DraftSpec draft;
  int prepare_threads = 2;            // templating and tokenizing, off the io threads
  size_t max_pending_prepare = 1024;  // requests waiting to be tokenized
  double drain_grace_s = 30;
  // Rung 2 (see ladder route): prefill workers answer POST /internal/prefill
  // and send KV to decode workers, which listen for it on kv_host:kv_port and
  // keep it up to kv_inbox_ttl for the request naming it.
  ServeRole role = ServeRole::kBoth;
  std::string kv_host = "0.0.0.0";
  uint16_t kv_port = 0;  // 0 = any free one (logged, and in /v1/models)
  size_t kv_inbox_bytes = size_t{1} << 30;
  std::chrono::milliseconds kv_inbox_ttl{30000};
  int kv_send_threads = 4;
  // Online verification against rung 1 and rollback (rate 0: off; role both only).
  ShadowConfig shadow;
};

struct Served;  // the loaded model, its engine and planner (local_backend.cc)

class LocalBackend : public Backend {
 public:
  // `config` and `tenants` outlive the backend.
  LocalBackend(const ServeConfig& config, const TenantRegistry& tenants);
  ~LocalBackend() override;

  // Loads the model (through ModelBundle, which checks the tokenizer against
  // the model), the chat template, the engine and the worker role's pieces.
  Status load();
  uint16_t kv_port() const;

  const char* role() const override { return serve_role_name(config_.role); }
  const RequestBuilder* builder() const override;
  void serve(GenerationPlan plan, const HttpRequest& http, std::shared_ptr<ResponseChannel> channel,
             SettledFn settled) override;
  HttpResponse embed(const EmbeddingsRequest& request, const HttpRequest& http, RequestRecord* record) override;
  void describe_health(ServerState state, nlohmann::json& doc) const override;
  int64_t context_length() const override;
  nlohmann::json model_facts() const override;
  void fill_gauges(GaugeSnapshot& gauges) const override;
  std::string extra_metrics() const override;
  bool owns_route(const std::string& path) const override;
  void serve_route(const HttpRequest& http, std::shared_ptr<ResponseChannel> channel,
                   std::function<void()> done) override;
  void cancel_all() override;
  std::string stop() override;

 private:
  // Every setting that can change output or latency, as /v1/models reports it.
  nlohmann::json effective_config() const;
  Status start_role();
  // The plan's prompts' token scores (GenerationPlan::prompt_scores).
  Status score_prompts(GenerationPlan& plan);
  // Answers a request that never reached the engine with `error`, and settles it.
  void refuse(const ApiError& error, int tenant, ResponseChannel& channel, const SettledFn& settled);
  // Runs a planned request as an Exchange, kept until it settles.
  void start_exchange(GenerationPlan plan, std::shared_ptr<ResponseChannel> channel, SettledFn settled);
  // The engine serving new requests.
  engine::Engine& live() const { return *services_.engine.load(); }
  // An engine over the loaded model with `ec`'s settings (and a draft).
  Result<std::unique_ptr<engine::Engine>> make_engine(engine::EngineConfig ec, const engine::DraftSpec& draft) const;
  Status start_shadow();
  // A shadow rollback: new requests go to an engine with `to`'s settings.
  Status switch_to(const ShadowFallback& to);
  // The slice a request is judged in: the one it names, else long_context
  // for a prompt of half the context or more, else its API (chat, completion).
  std::string slice_of(const GenerationPlan& plan) const;
  // Stops the shadow, the pump and every engine (idempotent).
  void stop_engines();

  static constexpr size_t kMaxPendingScoring = 64;

  const ServeConfig& config_;
  const TenantRegistry& tenants_;
  std::unique_ptr<Served> served_;   // set by load(); engines are added by rollbacks
  std::atomic<Served*> ready_{nullptr};
  std::string system_fingerprint_;
  ExchangeServices services_;
  // Rung 2: the decode role's inbox and listener, the prefill role's senders.
  KvLinkMetrics kv_metrics_;
  std::unique_ptr<KvInbox> kv_inbox_;
  std::unique_ptr<KvReceiver> kv_receiver_;
  std::unique_ptr<WorkQueue> kv_senders_;
  // Prompt logprobs: one pass of the model per prompt, one at a time, off the
  // prepare threads.
  std::unique_ptr<WorkQueue> scoring_ = std::make_unique<WorkQueue>(1, kMaxPendingScoring);
  PrefillServices prefill_;

  // Exchanges accepted and not yet settled, with whom to tell when they are.
  std::mutex mu_;
  std::unordered_map<const Exchange*, std::pair<std::shared_ptr<Exchange>, SettledFn>> exchanges_;
};

}  // namespace ladder::server
