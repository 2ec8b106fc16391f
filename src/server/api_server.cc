#include "server/api_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "common/build_info.h"
#include "common/sha256.h"
#include "engine/model_draft.h"
#include "grammar/grammar_cache.h"
#include "grammar/token_vocabulary.h"
#include "grammar/tool_call_format.h"
#include "kv/kv_format.h"
#include "model/model_bundle.h"
#include "server/api_error.h"
#include "server/embedder.h"
#include "server/exchange.h"
#include "server/kv_link.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/prefill_service.h"
#include "server/request_builder.h"
#include "server/stream_pump.h"
#include "server/server_state.h"
#include "server/tenants.h"
#include "server/work_queue.h"
#include "tokenizer/chat_template.h"

namespace ladder::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

HttpResponse json_response(int status, const json& doc) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(doc);
  return r;
}

// What a loaded model brings; immutable once built.
// Distinct grammars (response formats, tool sets) kept compiled.
constexpr size_t kGrammarCacheEntries = 64;

struct Served {
  model::ModelBundle bundle;
  tokenizer::ChatTemplate chat_template;
  std::unique_ptr<StreamPump> pump;
  std::unique_ptr<engine::Engine> engine;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  std::unique_ptr<grammar::GrammarCache> grammars;
  std::unique_ptr<RequestBuilder> builder;
  std::unique_ptr<Embedder> embedder;
};

}  // namespace

const char* serve_role_name(ServeRole role) {
  switch (role) {
    case ServeRole::kBoth: return "both";
    case ServeRole::kPrefill: return "prefill";
    case ServeRole::kDecode: return "decode";
  }
  return "unknown";
}

struct ApiServer::State {
  ServeConfig config;
  TenantRegistry tenants = TenantRegistry::anonymous();
  ServerMetrics metrics;
  std::atomic<ServerState> state{ServerState::kLoading};
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<HttpServer> metrics_http;
  std::unique_ptr<Served> served;  // set by load(), then read-only
  std::atomic<Served*> ready{nullptr};
  // /v1/models' "created": when this server started (unix seconds).
  int64_t started_unix = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  // Every response's system_fingerprint: the configuration that can change
  // outputs (weights, tokenizer, revision, effective settings), set by load().
  std::string system_fingerprint;
  ExchangeServices services;
  std::unique_ptr<WorkQueue> prepare;
  // Rung 2: the decode role's inbox and listener, the prefill role's senders.
  KvLinkMetrics kv_metrics;
  std::unique_ptr<KvInbox> kv_inbox;
  std::unique_ptr<KvReceiver> kv_receiver;
  std::unique_ptr<WorkQueue> kv_senders;
  PrefillServices prefill;

  // Requests accepted and not yet settled; the drain waits for them. The
  // exchanges among them are owned here until they settle.
  mutable std::mutex mu;
  std::condition_variable cv;
  int64_t live = 0;
  std::unordered_map<const Exchange*, std::shared_ptr<Exchange>> exchanges;
  Clock::time_point drain_started;
  bool grace_spent = false;
  bool finished = false;

  void handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch);
  // The checks every model endpoint shares (ready, API key), then `work` on a
  // prepare thread with the tenant, counted live until it calls add_live(-1)
  // or hands the request to an exchange.
  using PreparedWork = std::function<void(const HttpRequest&, int, std::shared_ptr<ResponseChannel>)>;
  void handle_model_request(HttpRequest req, std::shared_ptr<ResponseChannel> ch, PreparedWork work);
  void prepare_and_start(ApiKind kind, const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  void embed(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch);
  void reply_error(const std::shared_ptr<ResponseChannel>& ch, int tenant, const ApiError& e);
  HttpResponse health() const;
  // The served model's /v1/models entry (null before it is loaded).
  json model_entry() const;
  HttpResponse models() const;
  HttpResponse metrics_page(bool per_tenant) const;
  json effective_config(const engine::Engine& e) const;
  void add_live(int64_t n);
  void check_drain();
  void stop_all();
};

ApiServer::ApiServer(ServeConfig config) : state_(std::make_unique<State>()) { state_->config = std::move(config); }

ApiServer::~ApiServer() {
  State& s = *state_;
  // Exchanges left unsettled (a stop without a drain) go first: they refer
  // to the engine and the pump.
  {
    std::lock_guard lock(s.mu);
    s.exchanges.clear();
  }
  if (s.http) {
    s.http->stop();
    s.http->wait();
  }
  if (s.metrics_http) {
    s.metrics_http->stop();
    s.metrics_http->wait();
  }
  if (s.prepare) s.prepare->stop();
  if (s.kv_senders) s.kv_senders->stop();
  if (s.kv_receiver) s.kv_receiver->stop();
  if (s.served) {
    s.served->pump->stop();
    s.served->engine->shutdown();
  }
}

Status ApiServer::start() {
  State& s = *state_;
  if (!s.config.tenants_file.empty()) {
    if (!s.config.api_key.empty()) return invalid_argument("--api-key and --tenants are exclusive");
    LADDER_ASSIGN_OR_RETURN(s.tenants, TenantRegistry::from_toml_file(s.config.tenants_file));
    spdlog::info("{} tenants from {}", s.tenants.size(), s.config.tenants_file);
  } else if (!s.config.api_key.empty()) {
    s.tenants = TenantRegistry::single_key(s.config.api_key);
    spdlog::info("one tenant; requests must send 'Authorization: Bearer <the --api-key>'");
  } else {
    spdlog::info("no --tenants file or --api-key: serving one anonymous tenant, no API key required");
  }
  if (!s.config.admin_key.empty()) s.tenants.add_admin_key(s.config.admin_key);
  s.prepare = std::make_unique<WorkQueue>(s.config.prepare_threads, s.config.max_pending_prepare);

  s.http = std::make_unique<HttpServer>(
      s.config.http, [&s](HttpRequest req, std::shared_ptr<ResponseChannel> ch) { s.handle(std::move(req), std::move(ch)); },
      http_error_page);
  LADDER_RETURN_IF_ERROR(s.http->start());
  if (s.config.metrics_port) {
    HttpServerConfig mc = s.config.http;
    mc.host = s.config.metrics_host;
    mc.port = *s.config.metrics_port;
    s.metrics_http = std::make_unique<HttpServer>(
        mc,
        [&s](HttpRequest req, std::shared_ptr<ResponseChannel> ch) {
          if (req.path() == "/metrics" && req.method == "GET") {
            ch->respond(s.metrics_page(/*per_tenant=*/true));
          } else {
            ch->respond(error_response(not_found_error("the metrics listener serves only GET /metrics", "unknown_url")));
          }
        },
        http_error_page);
    LADDER_RETURN_IF_ERROR(s.metrics_http->start());
    spdlog::info("metrics listener on http://{}:{}/metrics", mc.host, s.metrics_http->port());
  }
  s.http->on_shutdown_signal([this](int sig) {
    spdlog::info("signal {}: draining", sig);
    drain();
  });
  s.http->every(std::chrono::milliseconds(20), [&s] { s.check_drain(); });
  spdlog::info("accepting connections on http://{}:{} while the model loads", s.config.http.host, s.http->port());
  return Status::ok();
}

uint16_t ApiServer::port() const { return state_->http->port(); }
uint16_t ApiServer::metrics_port() const { return state_->metrics_http ? state_->metrics_http->port() : 0; }
uint16_t ApiServer::kv_port() const { return state_->kv_receiver ? state_->kv_receiver->port() : 0; }

namespace {

// The rung-2 pieces of a prefill or decode worker, once its engine exists.
Status start_role(ApiServer::State& s, const Served& served) {
  const engine::Engine& e = *served.engine;
  if (s.config.role == ServeRole::kDecode) {
    const model::ModelConfig& mc = served.bundle.model->config();
    KvReceiverConfig rc;
    rc.host = s.config.kv_host;
    rc.port = s.config.kv_port;
    rc.model_digest = e.config().model_digest;
    rc.tokenizer_digest = e.config().tokenizer_digest;
    rc.shape = kv::KvShape{.n_layers = static_cast<int>(mc.n_layers),
                           .n_kv_heads = static_cast<int>(mc.n_kv_heads),
                           .head_dim = static_cast<int>(mc.head_dim),
                           .block_size = e.config().block_size,
                           .n_blocks = 0,
                           .dtype = e.config().kv_dtype};
    s.kv_inbox = std::make_unique<KvInbox>(s.config.kv_inbox_bytes, s.config.kv_inbox_ttl, s.kv_metrics);
    s.kv_receiver = std::make_unique<KvReceiver>(rc, *s.kv_inbox, s.kv_metrics);
    LADDER_RETURN_IF_ERROR(s.kv_receiver->start());
    spdlog::info("decode role: KV transfers accepted on {}:{}", rc.host, s.kv_receiver->port());
  } else if (s.config.role == ServeRole::kPrefill) {
    s.kv_senders = std::make_unique<WorkQueue>(s.config.kv_send_threads, s.config.max_pending_prepare);
    s.prefill.engine = served.engine.get();
    s.prefill.pump = served.pump.get();
    s.prefill.tenants = &s.tenants;
    s.prefill.metrics = &s.kv_metrics;
    s.prefill.senders = s.kv_senders.get();
    s.prefill.on_done = [&s] { s.add_live(-1); };
    spdlog::info("prefill role: POST /internal/prefill computes prompts and sends their KV to decode workers");
  }
  return Status::ok();
}

}  // namespace

Status ApiServer::load() {
  State& s = *state_;
  const auto t0 = Clock::now();
  LADDER_ASSIGN_OR_RETURN(model::ModelBundle bundle, model::ModelBundle::load(s.config.model_path));
  LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate tmpl, tokenizer::chat_template_from_gguf(*bundle.file));
  auto served = std::unique_ptr<Served>(new Served{std::move(bundle), std::move(tmpl), nullptr, nullptr, nullptr});

  engine::EngineConfig ec = s.config.engine;
  ec.model_digest = served->bundle.file->digest();
  ec.tokenizer_digest = served->bundle.tokenizer->digest();
  ec.tokenizer = served->bundle.tokenizer.get();
  ec.tenants.clear();
  for (const auto& t : s.tenants.tenants()) {
    ec.tenants.push_back({t.reserved_share, t.max_concurrent, t.max_queued, t.priority});
  }
  served->pump = std::make_unique<StreamPump>();
  ec.on_step = [pump = served->pump.get()](const engine::StepReport&) { pump->wake(); };
  if (s.config.draft.kind != engine::DraftSpec::Kind::kNone) {
    LADDER_ASSIGN_OR_RETURN(ec.speculative.draft,
                            engine::make_draft(s.config.draft, *served->bundle.model, *served->bundle.file,
                                               engine::draft_options_for(ec)));
  }
  LADDER_ASSIGN_OR_RETURN(served->engine, engine::Engine::create(*served->bundle.model, ec));
  if (s.config.served_model_name.empty()) {
    s.config.served_model_name = std::filesystem::path(s.config.model_path).stem().string();
  }
  {
    // Stable across restarts of one configuration: the decode worker's KV
    // port (chosen at start) is left out.
    json settings = s.effective_config(*served->engine);
    settings.erase("kv_port");
    s.system_fingerprint =
        "fp_" + sha256_hex(json{{"model_digest", ec.model_digest},
                                {"tokenizer_digest", ec.tokenizer_digest},
                                {"revision", git_revision()},
                                {"config", settings}}
                               .dump())
                    .substr(0, 16);
  }
  RequestBuilder::Model bm;
  bm.system_fingerprint = s.system_fingerprint;
  bm.tokenizer = served->bundle.tokenizer.get();
  bm.chat_template = &served->chat_template;
  bm.served_model_name = s.config.served_model_name;
  bm.model_path = s.config.model_path;
  bm.max_input_tokens = served->engine->max_input_tokens();
  served->vocabulary = grammar::TokenVocabulary::from_tokenizer(*served->bundle.tokenizer);
  served->grammars = std::make_unique<grammar::GrammarCache>(served->vocabulary, kGrammarCacheEntries);
  bm.grammars = served->grammars.get();
  bm.vocabulary = served->vocabulary.get();
  const grammar::DetectedToolCallFormat tools =
      grammar::detect_tool_call_format(served->chat_template.source(), served->vocabulary.get());
  bm.tool_format = tools.format;
  spdlog::info("tool calls: {} format{}", grammar::tool_call_format_name(tools.format),
               tools.detected ? "" : " (nothing in the template names one; the default)");
  bm.tool_preamble = s.config.tool_preamble && !served->chat_template.renders_tools();
  if (!served->chat_template.renders_tools()) {
    spdlog::info(s.config.tool_preamble
                     ? "the chat template does not render tools: a request's tools are described in its system "
                       "message (the tools preamble; --tool-preamble off to leave them out)"
                     : "the chat template does not render tools and --tool-preamble is off: the model sees a "
                       "request's tools only through a forced call's grammar (tool_choice required or a function)");
  }
  served->builder = std::make_unique<RequestBuilder>(bm);
  served->embedder = std::make_unique<Embedder>(*served->bundle.model, *served->bundle.tokenizer,
                                                served->engine->max_input_tokens());

  s.services.engine = served->engine.get();
  s.services.pump = served->pump.get();
  s.services.metrics = &s.metrics;
  s.services.tokenizer = served->bundle.tokenizer.get();
  s.services.tenants = &s.tenants;
  s.services.on_settled = [&s](const Exchange* x, const GenerationPlan& plan, const RequestRecord& rec) {
    spdlog::info("{} {} {} tenant={} in={} out={} ttft_ms={:.1f} e2e_ms={:.1f} id={}{}",
                 "POST", plan.kind == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions", rec.http_status,
                 rec.tenant, rec.prompt_tokens, rec.completion_tokens, rec.ttft_s * 1000, rec.e2e_s * 1000,
                 plan.meta.id, plan.user.empty() ? "" : " user=" + plan.user);
    std::shared_ptr<Exchange> done;  // released outside the lock
    std::lock_guard lock(s.mu);
    auto it = s.exchanges.find(x);
    if (it != s.exchanges.end()) {
      done = std::move(it->second);
      s.exchanges.erase(it);
    }
    s.live -= 1;
  };
  LADDER_RETURN_IF_ERROR(start_role(s, *served));
  const engine::Engine& e = *served->engine;
  spdlog::info("model {} loaded in {:.0f} ms: context {}, {} KV blocks ({}), {} running slots, queue {}",
               s.config.served_model_name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
               e.context_length(), e.n_kv_blocks(), e.kv_format_name(), e.config().scheduler.max_running,
               e.config().max_queue);
  s.served = std::move(served);
  s.ready = s.served.get();
  ServerState expected = ServerState::kLoading;
  if (!s.state.compare_exchange_strong(expected, ServerState::kReady)) {
    spdlog::info("drain requested while loading");  // check_drain() finds nothing live and stops
  }
  return Status::ok();
}

void ApiServer::drain() {
  State& s = *state_;
  ServerState st = s.state.load();
  if (st == ServerState::kDraining || st == ServerState::kStopped) return;
  {
    std::lock_guard lock(s.mu);
    s.drain_started = Clock::now();
  }
  s.state = ServerState::kDraining;
  s.http->stop_accepting();
}

void ApiServer::wait() {
  State& s = *state_;
  std::vector<std::shared_ptr<Exchange>> unsettled;
  {
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, [&] { return s.finished; });
    for (const auto& [key, x] : s.exchanges) unsettled.push_back(x);
  }
  for (auto& x : unsettled) x->abandon();
  unsettled.clear();
  s.http->stop();
  s.http->wait();
  if (s.metrics_http) {
    s.metrics_http->stop();
    s.metrics_http->wait();
  }
  s.prepare->stop();
  if (s.kv_senders) s.kv_senders->stop();
  if (s.kv_receiver) s.kv_receiver->stop();
  std::string summary;
  for (const auto& [status, n] : s.metrics.requests_by_status()) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " x " + std::to_string(status);
  }
  if (s.served) {
    s.served->pump->stop();
    s.served->engine->shutdown();
    const engine::EngineMetrics m = s.served->engine->metrics();
    spdlog::info("stopped: requests {}; KV blocks in use {} of {}, running {}, queued {}",
                 summary.empty() ? "none" : summary, m.kv_blocks_used, m.kv_blocks_total, m.running,
                 m.queue_depth + m.admission_queued);
  } else {
    spdlog::info("stopped: requests {}", summary.empty() ? "none" : summary);
  }
}

// ---------------------------------------------------------------- routing

void ApiServer::State::handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch) {
  const std::string path = req.path();
  auto only = [&](const char* method) -> bool {
    if (req.method == method) return true;
    HttpResponse r =
        error_response(method_not_allowed("method " + req.method + " is not allowed on " + path + "; use " + method));
    r.headers.emplace_back("Allow", method);
    ch->respond(std::move(r));
    return false;
  };
  if (path == "/health") {
    if (only("GET")) ch->respond(health());
  } else if (path == "/metrics") {
    if (!only("GET")) return;
    // The main port's /metrics follows the API key like every other route
    // but /health; the --metrics-port listener serves it to whoever reaches
    // that (private) port.
    const std::string key = bearer_key(req);
    const bool admin = !key.empty() && tenants.is_admin(key);
    if (!admin && tenants.authenticate(key) < 0) {
      reply_error(ch, -1,
                  unauthenticated("missing or invalid API key: /metrics needs 'Authorization: Bearer <key>' like "
                                  "the API (a scraper without a key can use the --metrics-port listener)"));
      return;
    }
    ch->respond(metrics_page(admin));
  } else if (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
    if (!only("GET")) return;
    if (tenants.authenticate(bearer_key(req)) < 0) {
      reply_error(ch, -1, unauthenticated("missing or invalid API key: send 'Authorization: Bearer <key>'"));
      return;
    }
    if (path == "/v1/models") {
      ch->respond(models());
      return;
    }
    // GET /v1/models/{id}: the model by the name it is served under (or its path).
    const std::string id = percent_decode(path.substr(std::string("/v1/models/").size()));
    const json entry = model_entry();
    if (entry.is_null() || (id != config.served_model_name && id != config.model_path)) {
      ch->respond(error_response(not_found_error(
          fmt::format("the model '{}' does not exist: this server serves '{}' (GET /v1/models lists it)", id,
                      config.served_model_name),
          "model_not_found")));
      return;
    }
    ch->respond(json_response(200, entry));
  } else if (path == "/internal/prefill" && config.role == ServeRole::kPrefill) {
    if (!only("POST")) return;
    if (state.load() != ServerState::kReady) {
      reply_error(ch, -1, unavailable("the prefill worker is not ready", "server_draining"));
      return;
    }
    add_live(1);
    handle_prefill(prefill, req, bearer_key(req), std::move(ch));
  } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!only("POST")) return;
    const ApiKind kind = path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat;
    handle_model_request(std::move(req), std::move(ch),
                         [this, kind](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           prepare_and_start(kind, r, tenant, std::move(c));
                         });
  } else if (path == "/v1/embeddings") {
    if (!only("POST")) return;
    handle_model_request(std::move(req), std::move(ch),
                         [this](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           embed(r, tenant, std::move(c));
                         });
  } else {
    ch->respond(error_response(not_found_error("no route " + req.method + " " + path, "unknown_url")));
  }
}

void ApiServer::State::reply_error(const std::shared_ptr<ResponseChannel>& ch, int tenant, const ApiError& e) {
  RequestRecord rec;
  rec.tenant = tenant >= 0 ? tenants.tenant(tenant).name : "unauthenticated";
  rec.http_status = e.http_status;
  rec.rejected_early = e.http_status == 429;
  metrics.record(rec);
  spdlog::info("error {} tenant={} code={}", e.http_status, rec.tenant, e.code);
  ch->respond(error_response(e));
}

void ApiServer::State::handle_model_request(HttpRequest req, std::shared_ptr<ResponseChannel> ch, PreparedWork work) {
  const ServerState st = state.load();
  if (st != ServerState::kReady) {
    reply_error(ch, -1,
                st == ServerState::kLoading ? unavailable("the model is still loading; retry shortly", "model_loading")
                                            : unavailable("the server is shutting down", "server_draining"));
    return;
  }
  const std::string key = bearer_key(req);
  const int tenant = tenants.authenticate(key);
  if (tenant < 0) {
    reply_error(ch, -1,
                unauthenticated(req.header("authorization").empty()
                                    ? "missing API key: send 'Authorization: Bearer <key>'"
                                    : "invalid API key"));
    return;
  }
  // Templating, tokenizing and embedding happen on the prepare threads.
  add_live(1);
  auto task = [tenant, ch, req = std::move(req), work = std::move(work)]() { work(req, tenant, ch); };
  if (!prepare->post(std::move(task))) {
    add_live(-1);
    reply_error(ch, tenant, unavailable("too many requests are waiting to be tokenized; retry shortly",
                                        "server_overloaded"));
  }
}

void ApiServer::State::prepare_and_start(ApiKind kind, const HttpRequest& req, int tenant,
                                         std::shared_ptr<ResponseChannel> ch) {
  Served* s = ready.load();
  if (state.load() != ServerState::kReady || s == nullptr || ch->client_gone()) {
    reply_error(ch, tenant, unavailable("the server is shutting down", "server_draining"));
    add_live(-1);
    return;
  }
  GenerationPlan plan;
  if (auto err = s->builder->build(kind, req, tenant, tenants.tenant(tenant), &plan)) {
    reply_error(ch, tenant, *err);
    add_live(-1);
    return;
  }
  if (kv_inbox != nullptr) {
    // A decode worker: the router names the transfer that carries this prompt's KV.
    const std::string transfer = req.header("x-ladder-kv-transfer");
    if (!transfer.empty()) {
      plan.request.kv_import = kv_inbox->take(transfer);
      if (plan.request.kv_import == nullptr) {
        spdlog::warn("KV transfer {} is not here (expired or never sent): computing the prompt", transfer);
      }
    }
  }
  auto x = std::make_shared<Exchange>(std::move(plan), std::move(ch), services);
  {
    std::lock_guard lock(mu);
    exchanges.emplace(x.get(), x);
  }
  x->start();
}

void ApiServer::State::embed(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch) {
  Served* s = ready.load();
  if (state.load() != ServerState::kReady || s == nullptr || ch->client_gone()) {
    reply_error(ch, tenant, unavailable("the server is shutting down", "server_draining"));
    add_live(-1);
    return;
  }
  const auto arrival = req.received;
  EmbeddingsRequest parsed;
  std::optional<ApiError> err = parse_embeddings_request(req.body, &parsed);
  if (!err && !parsed.model.empty() && parsed.model != config.served_model_name && parsed.model != config.model_path) {
    err = not_found_error("the model '" + parsed.model + "' does not exist; this server serves '" +
                              config.served_model_name + "'",
                          "model_not_found");
  }
  int64_t n_tokens = 0;
  Result<json> body = err ? Result<json>(json()) : s->embedder->respond(parsed, config.served_model_name, &n_tokens);
  if (!err && !body.is_ok()) err = api_error_from_status(body.status());
  if (err) {
    reply_error(ch, tenant, *err);
    add_live(-1);
    return;
  }
  HttpResponse r;
  r.body = dump_json(*body);
  ch->respond(std::move(r));
  RequestRecord rec;
  rec.tenant = tenants.tenant(tenant).name;
  rec.http_status = 200;
  rec.prompt_tokens = n_tokens;
  rec.e2e_s = std::chrono::duration<double>(Clock::now() - arrival).count();
  rec.finished = true;
  metrics.record(rec);
  spdlog::info("POST /v1/embeddings 200 tenant={} in={} inputs={} e2e_ms={:.1f}", rec.tenant, n_tokens,
               parsed.inputs.size(), rec.e2e_s * 1000);
  add_live(-1);
}

void ApiServer::State::add_live(int64_t n) {
  std::lock_guard lock(mu);
  live += n;
}

HttpResponse ApiServer::State::health() const {
  const ServerState st = state.load();
  json doc = {{"status", state_name(st)}, {"role", serve_role_name(config.role)}};
  if (Served* s = ready.load(); s != nullptr && st == ServerState::kReady) {
    const engine::EngineMetrics m = s->engine->metrics();
    doc["running"] = m.running;
    doc["kv_blocks_used"] = m.kv_blocks_used;
    doc["kv_blocks_free"] = m.kv_blocks_free;
    if (config.role != ServeRole::kBoth) {
      // What `ladder route` checks and places by: the same model everywhere,
      // the keys' namespace, capacity, where KV goes.
      const engine::EngineConfig& ec = s->engine->config();
      doc["model_digest"] = ec.model_digest;
      doc["tokenizer_digest"] = ec.tokenizer_digest;
      doc["kv_format"] = s->engine->kv_format_name();
      doc["kv_block_size"] = ec.block_size;
      doc["max_running"] = ec.scheduler.max_running;
      doc["max_input_tokens"] = s->engine->max_input_tokens();
      doc["kv_port"] = kv_receiver ? kv_receiver->port() : 0;
    }
  }
  return json_response(st == ServerState::kReady ? 200 : 503, doc);
}

json ApiServer::State::effective_config(const engine::Engine& e) const {
  const engine::EngineConfig& ec = e.config();
  const engine::SpeculativeConfig& sc = ec.speculative;
  const kv::EvictionPolicy& ev = ec.kv_eviction;
  const int rung = config.role != ServeRole::kBoth                             ? 2
                   : kv::kv_format_is_approximate(ec.kv_dtype) || ev.enabled() ? 3
                   : sc.draft                                                  ? 4
                                                                               : 1;
  return {{"rung", rung},
          {"role", serve_role_name(config.role)},
          {"kv_port", kv_receiver ? kv_receiver->port() : 0},
          {"speculative",
           {{"draft", sc.draft ? sc.draft->name() : "off"},
            {"k", sc.draft ? sc.k : 0},
            {"adaptive", sc.draft != nullptr && sc.adaptive}}},
          {"kv_dtype", std::string(tensor_type_name(ec.kv_dtype))},
          {"kv_format", e.kv_format_name()},
          {"kv_evict",
           {{"policy", std::string(kv::eviction_kind_name(ev.kind))},
            {"budget_tokens", ev.enabled() ? ev.budget_tokens : 0},
            {"sink_tokens", ev.enabled() ? ev.sink_tokens : 0}}},
          {"kv_host_bytes", ec.kv_host_bytes},
          {"kv_block_size", ec.block_size},
          {"kv_blocks", e.n_kv_blocks()},
          {"prefix_caching", ec.prefix_caching},
          {"max_batch_tokens", ec.scheduler.max_batch_tokens},
          {"max_running", ec.scheduler.max_running},
          {"max_chunk_tokens", ec.scheduler.max_chunk_tokens},
          {"context_length", e.context_length()},
          {"max_input_tokens", e.max_input_tokens()},
          {"max_output_tokens", e.max_output_tokens()},
          {"max_queue", ec.max_queue},
          {"tool_preamble", config.tool_preamble},
          {"threads", ec.n_threads},
          {"tenants", tenants.size()}};
}

HttpResponse ApiServer::State::models() const {
  json data = json::array();
  if (json entry = model_entry(); !entry.is_null()) data.push_back(std::move(entry));
  return json_response(200, {{"object", "list"}, {"data", data}});
}

json ApiServer::State::model_entry() const {
  if (Served* s = ready.load()) {
    // What a measurement of this server must name to be reproducible: the
    // exact weights and tokenizer, every setting that can change output or
    // latency, and the engine's revision.
    const engine::EngineConfig& ec = s->engine->config();
    return {{"id", config.served_model_name},
                    {"object", "model"},
                    {"created", started_unix},
                    {"owned_by", "ladder"},
                    {"max_model_len", s->engine->context_length()},
                    {"ladder",
                     {{"model_digest", ec.model_digest},
                      {"tokenizer_digest", ec.tokenizer_digest},
                      {"kv_dtype", std::string(tensor_type_name(ec.kv_dtype))},
                      {"kv_evict", std::string(kv::eviction_kind_name(ec.kv_eviction.kind))},
                      {"kv_host_bytes", ec.kv_host_bytes},
                      {"kv_block_size", ec.block_size},
                      {"kv_blocks", s->engine->n_kv_blocks()},
                      {"embedding_width", s->embedder->width()},
                      {"version", version()},
                      {"revision", git_revision()},
                      {"system_fingerprint", system_fingerprint},
                      {"config", effective_config(*s->engine)}}}};
  }
  return nullptr;
}

HttpResponse ApiServer::State::metrics_page(bool per_tenant) const {
  GaugeSnapshot g;
  g.state = state_name(state.load());
  g.open_connections = http->open_connections();
  {
    std::lock_guard lock(mu);
    g.live_requests = live;
  }
  if (Served* s = ready.load()) {
    const engine::EngineMetrics m = s->engine->metrics();
    g.admission_queue = m.admission_queued;
    g.engine_waiting = m.queue_depth;
    g.running = m.running;
    g.kv_blocks_used = m.kv_blocks_used;
    g.kv_blocks_free = m.kv_blocks_free;
    g.prefix_hit_tokens = m.prefix_hit_tokens;
    g.kv_host = m.kv_host;
    g.speculative = s->engine->config().speculative.draft != nullptr;
    g.spec = m.spec;
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics.render(g, per_tenant);
  if (config.role != ServeRole::kBoth) {
    const engine::EngineMetrics m = ready.load() ? ready.load()->engine->metrics() : engine::EngineMetrics{};
    r.body += kv_metrics.render(m.kv_imported_blocks, m.kv_refused_blocks);
  }
  return r;
}

void ApiServer::State::check_drain() {
  if (state.load() != ServerState::kDraining) return;
  int64_t n_live = 0;
  double elapsed_s = 0;
  bool cancel_now = false;
  {
    std::lock_guard lock(mu);
    n_live = live;
    elapsed_s = std::chrono::duration<double>(Clock::now() - drain_started).count();
    if (elapsed_s > config.drain_grace_s && !grace_spent) {
      grace_spent = true;
      cancel_now = n_live > 0;
    }
  }
  if (cancel_now) {
    spdlog::warn("drain grace of {:.0f} s spent: cancelling {} requests", config.drain_grace_s, n_live);
    if (Served* s = ready.load()) s->engine->cancel_all();
  }
  // Cancelled requests end with an error event; give those (and slow
  // readers) a bounded time to go out.
  if (n_live > 0 && elapsed_s > config.drain_grace_s + 10) {
    spdlog::warn("stopping with {} responses not delivered", n_live);
    n_live = 0;
  }
  if (n_live == 0) stop_all();
}

void ApiServer::State::stop_all() {
  if (state.exchange(ServerState::kStopped) == ServerState::kStopped) return;
  spdlog::info("drained; stopping");
  std::lock_guard lock(mu);
  finished = true;
  cv.notify_all();
}

}  // namespace ladder::server
