#include "server/frontend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/build_info.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/responses_request.h"

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

const char* path_of(ApiKind kind) {
  switch (kind) {
    case ApiKind::kChat: return "/v1/chat/completions";
    case ApiKind::kResponses: return "/v1/responses";
    case ApiKind::kCompletion: break;
  }
  return "/v1/completions";
}

// Responses kept for previous_response_id and GET /v1/responses/{id}: at
// most this many, in at most this much JSON.
constexpr size_t kStoredResponses = 4096;
constexpr size_t kStoredResponseBytes = size_t{256} << 20;

}  // namespace

std::string served_name_or_stem(const std::string& name, const std::string& model_path) {
  return name.empty() ? std::filesystem::path(model_path).stem().string() : name;
}

bool meets_slo(const RequestRecord& rec, const GenerationPlan& plan, const TenantSlo& slo) {
  if (!rec.finished || rec.ttft_s < 0) return false;
  const Clock::time_point deadline = plan.request.scheduling.deadline;
  if (deadline != Clock::time_point::max() &&
      plan.arrival + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(rec.ttft_s)) >
          deadline) {
    return false;
  }
  return slo.tpot_ms <= 0 || rec.tpot_s < 0 || rec.tpot_s * 1000 <= slo.tpot_ms;
}

Frontend::Frontend(FrontendConfig config)
    : config_(std::move(config)), stored_(std::make_shared<ResponseStore>(kStoredResponses, kStoredResponseBytes)) {
  started_unix_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Frontend::~Frontend() { stop_now(); }

void Frontend::stop_now() {
  if (http_) {
    http_->stop();
    http_->wait();
  }
  if (metrics_http_) {
    metrics_http_->stop();
    metrics_http_->wait();
  }
  if (prepare_) prepare_->stop();
}

Status Frontend::load_tenants() {
  if (!config_.tenants_file.empty()) {
    if (!config_.api_key.empty()) return invalid_argument("--api-key and --tenants are exclusive");
    LADDER_ASSIGN_OR_RETURN(tenants_, TenantRegistry::from_toml_file(config_.tenants_file));
    spdlog::info("{} tenants from {}", tenants_.size(), config_.tenants_file);
  } else if (!config_.api_key.empty()) {
    tenants_ = TenantRegistry::single_key(config_.api_key);
    spdlog::info("one tenant; requests must send 'Authorization: Bearer <the --api-key>'");
  } else {
    spdlog::info("no --tenants file or --api-key: serving one anonymous tenant, no API key required");
  }
  if (!config_.admin_key.empty()) tenants_.add_admin_key(config_.admin_key);
  return Status::ok();
}

Status Frontend::start(Backend* backend) {
  backend_ = backend;
  prepare_ = std::make_unique<WorkQueue>(config_.prepare_threads, config_.max_pending_prepare);
  http_ = std::make_unique<HttpServer>(
      config_.http,
      [this](HttpRequest req, std::shared_ptr<ResponseChannel> ch) { handle(std::move(req), std::move(ch)); },
      http_error_page);
  LADDER_RETURN_IF_ERROR(http_->start());
  if (config_.metrics_port) {
    HttpServerConfig mc = config_.http;
    mc.host = config_.metrics_host;
    mc.port = *config_.metrics_port;
    metrics_http_ = std::make_unique<HttpServer>(
        mc,
        [this](HttpRequest req, std::shared_ptr<ResponseChannel> ch) {
          if (req.path() == "/metrics" && req.method == "GET") {
            ch->respond(metrics_page(/*per_tenant=*/true));
          } else {
            ch->respond(
                error_response(not_found_error("the metrics listener serves only GET /metrics", "unknown_url")));
          }
        },
        http_error_page);
    LADDER_RETURN_IF_ERROR(metrics_http_->start());
    spdlog::info("metrics listener on http://{}:{}/metrics", mc.host, metrics_http_->port());
  }
  http_->on_shutdown_signal([this](int sig) {
    spdlog::info("signal {}: draining", sig);
    drain();
  });
  http_->every(std::chrono::milliseconds(20), [this] { check_drain(); });
  return Status::ok();
}

void Frontend::set_ready() {
  ServerState expected = ServerState::kLoading;
  if (!state_.compare_exchange_strong(expected, ServerState::kReady)) {
    spdlog::info("drain requested while loading");  // check_drain() finds nothing live and stops
  }
}

uint16_t Frontend::port() const { return http_->port(); }
uint16_t Frontend::metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }

// ---------------------------------------------------------------- routing

void Frontend::handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch) {
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
    const bool admin = !key.empty() && tenants_.is_admin(key);
    if (!admin && tenants_.authenticate(key) < 0) {
      reply_error(ch, -1,
                  unauthenticated("missing or invalid API key: /metrics needs 'Authorization: Bearer <key>' like "
                                  "the API (a scraper without a key can use the --metrics-port listener)"),
                  false);
      return;
    }
    ch->respond(metrics_page(admin));
  } else if (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
    if (!only("GET")) return;
    if (tenants_.authenticate(bearer_key(req)) < 0) {
      reply_error(ch, -1, unauthenticated("missing or invalid API key: send 'Authorization: Bearer <key>'"), false);
      return;
    }
    ch->respond(models(path));
  } else if (backend_->owns_route(path)) {
    if (!only("POST")) return;
    if (!ready()) {
      reply_error(ch, -1, unavailable("the worker is not ready", "server_draining"), false);
      return;
    }
    add_live(1);
    backend_->serve_route(req, std::move(ch), [this] { add_live(-1); });
  } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!only("POST")) return;
    const ApiKind kind = path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat;
    accept_model_request(std::move(req), std::move(ch),
                         [this, kind](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           plan_and_serve(kind, r, tenant, std::move(c));
                         });
  } else if (path == "/v1/embeddings") {
    if (!only("POST")) return;
    accept_model_request(std::move(req), std::move(ch),
                         [this](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           embed(r, tenant, std::move(c));
                         });
  } else if (path == "/v1/responses") {
    if (!only("POST")) return;
    accept_model_request(std::move(req), std::move(ch),
                         [this](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           plan_response(r, tenant, std::move(c));
                         });
  } else if (path.rfind("/v1/responses/", 0) == 0) {
    if (req.method != "DELETE" && !only("GET")) return;
    const int tenant = tenants_.authenticate(bearer_key(req));
    if (tenant < 0) {
      reply_error(ch, -1, unauthenticated("missing or invalid API key: send 'Authorization: Bearer <key>'"), false);
      return;
    }
    ch->respond(stored_response(req.method, percent_decode(path.substr(std::string("/v1/responses/").size())),
                                tenant));
  } else if (path == "/tokenize" || path == "/detokenize") {
    if (!only("POST")) return;
    const bool to_ids = path == "/tokenize";
    accept_model_request(std::move(req), std::move(ch),
                         [this, to_ids](const HttpRequest& r, int tenant, std::shared_ptr<ResponseChannel> c) {
                           convert_tokens(to_ids, r, tenant, std::move(c));
                         });
  } else if (path == "/version") {
    if (only("GET")) ch->respond(json_response(200, {{"version", version()}, {"revision", git_revision()}}));
  } else {
    ch->respond(error_response(not_found_error("no route " + req.method + " " + path, "unknown_url")));
  }
}

void Frontend::reply_error(const std::shared_ptr<ResponseChannel>& ch, int tenant, const ApiError& e,
                           bool was_live) {
  RequestRecord rec;
  rec.tenant = tenant >= 0 ? tenants_.tenant(tenant).name : "unauthenticated";
  rec.http_status = e.http_status;
  rec.rejected_early = e.http_status == 429;
  metrics_.record(rec);
  spdlog::info("error {} tenant={} code={}", e.http_status, rec.tenant, e.code);
  ch->respond(error_response(e));
  if (was_live) add_live(-1);
}

void Frontend::accept_model_request(HttpRequest req, std::shared_ptr<ResponseChannel> ch, PreparedWork work) {
  const ServerState st = state_.load();
  if (st != ServerState::kReady || backend_->builder() == nullptr) {
    reply_error(ch, -1,
                st == ServerState::kLoading ? unavailable("the model is still loading; retry shortly", "model_loading")
                                            : unavailable("the server is shutting down", "server_draining"),
                false);
    return;
  }
  const std::string key = bearer_key(req);
  const int tenant = tenants_.authenticate(key);
  if (tenant < 0) {
    reply_error(ch, -1,
                unauthenticated(req.header("authorization").empty()
                                    ? "missing API key: send 'Authorization: Bearer <key>'"
                                    : "invalid API key"),
                false);
    return;
  }
  add_live(1);
  auto task = [tenant, ch, req = std::move(req), work = std::move(work)]() { work(req, tenant, ch); };
  if (!prepare_->post(std::move(task))) {
    reply_error(ch, tenant,
                unavailable("too many requests are waiting to be tokenized; retry shortly", "server_overloaded"),
                true);
  }
}

void Frontend::plan_and_serve(ApiKind kind, const HttpRequest& req, int tenant,
                              std::shared_ptr<ResponseChannel> ch) {
  if (state_.load() != ServerState::kReady || ch->client_gone()) {
    reply_error(ch, tenant, unavailable("the server is shutting down", "server_draining"), true);
    return;
  }
  GenerationPlan plan;
  if (auto err = backend_->builder()->build(kind, req, tenant, tenants_.tenant(tenant), &plan)) {
    reply_error(ch, tenant, *err, true);
    return;
  }
  serve_plan(std::move(plan), req, std::move(ch));
}

void Frontend::plan_response(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch) {
  if (state_.load() != ServerState::kReady || ch->client_gone()) {
    reply_error(ch, tenant, unavailable("the server is shutting down", "server_draining"), true);
    return;
  }
  ResponsesRequest rr;
  if (auto err = parse_responses_request(req.body, tenant, *stored_, &rr)) {
    reply_error(ch, tenant, *err, true);
    return;
  }
  // Planned as the chat request it amounts to; a worker behind `ladder
  // route` is sent the whole conversation, and keeps nothing.
  HttpRequest as_chat = req;
  as_chat.body = rr.chat.dump();
  GenerationPlan plan;
  if (auto err = backend_->builder()->build(ApiKind::kChat, as_chat, tenant, tenants_.tenant(tenant), &plan)) {
    reply_error(ch, tenant, *err, true);
    return;
  }
  plan.meta.kind = ApiKind::kResponses;
  plan.meta.id = random_response_id("resp_");
  auto context = std::make_shared<ResponsesContext>();
  context->skeleton = std::move(rr.skeleton);
  if (rr.store) {
    context->on_response = [store = stored_, tenant, conversation = std::move(rr.conversation)](const json& response) {
      ResponseStore::Entry entry;
      entry.tenant = tenant;
      entry.conversation = conversation;
      // Output items are valid input items: the next turn continues from them.
      for (const json& item : response.value("output", json::array())) {
        entry.conversation.push_back(nlohmann::ordered_json::parse(item.dump()));
      }
      entry.response = nlohmann::ordered_json::parse(response.dump());
      store->put(response.value("id", ""), std::move(entry));
    };
  }
  plan.responses = std::move(context);
  HttpRequest relayed = req;
  rr.expanded["store"] = false;
  relayed.body = rr.expanded.dump();
  serve_plan(std::move(plan), relayed, std::move(ch));
}

HttpResponse Frontend::stored_response(const std::string& method, const std::string& id, int tenant) {
  if (method == "DELETE") {
    if (stored_->erase(id, tenant)) return json_response(200, {{"id", id}, {"object", "response"}, {"deleted", true}});
  } else if (std::optional<ResponseStore::Entry> e = stored_->get(id, tenant)) {
    HttpResponse r;
    r.body = e->response.dump();
    return r;
  }
  return error_response(not_found_error("no stored response '" + id + "'", "response_not_found"));
}

void Frontend::serve_plan(GenerationPlan plan, const HttpRequest& req, std::shared_ptr<ResponseChannel> ch) {
  // What the settlement needs of the plan, kept apart from the plan the
  // backend consumes.
  auto keep = std::make_shared<GenerationPlan>();
  keep->kind = plan.meta.kind;  // the endpoint, for the access log
  keep->meta.id = plan.meta.id;
  keep->user = plan.user;
  keep->tenant = plan.tenant;
  keep->arrival = plan.arrival;
  keep->request.scheduling.deadline = plan.request.scheduling.deadline;
  backend_->serve(std::move(plan), req, std::move(ch), [this, keep](RequestRecord rec) { settle(*keep, rec); });
}

void Frontend::settle(const GenerationPlan& plan, RequestRecord rec) {
  rec.slo_met = meets_slo(rec, plan, tenants_.tenant(plan.tenant).slo);
  metrics_.record(rec);
  spdlog::info("POST {} {} tenant={} in={} out={} ttft_ms={:.1f} e2e_ms={:.1f} id={}{}", path_of(plan.kind),
               rec.http_status, rec.tenant, rec.prompt_tokens, rec.completion_tokens, rec.ttft_s * 1000,
               rec.e2e_s * 1000, plan.meta.id, plan.user.empty() ? "" : " user=" + plan.user);
  add_live(-1);
}

void Frontend::embed(const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch) {
  if (state_.load() != ServerState::kReady || ch->client_gone()) {
    reply_error(ch, tenant, unavailable("the server is shutting down", "server_draining"), true);
    return;
  }
  EmbeddingsRequest parsed;
  std::optional<ApiError> err = parse_embeddings_request(req.body, &parsed);
  if (!err && !parsed.model.empty() && parsed.model != config_.served_model_name &&
      parsed.model != config_.model_path) {
    err = not_found_error("the model '" + parsed.model + "' does not exist; this server serves '" +
                              config_.served_model_name + "'",
                          "model_not_found");
  }
  if (err) {
    reply_error(ch, tenant, *err, true);
    return;
  }
  RequestRecord rec;
  rec.tenant = tenants_.tenant(tenant).name;
  HttpResponse r = backend_->embed(parsed, req, &rec);
  rec.http_status = r.status;
  rec.rejected_early = r.status == 429;
  rec.finished = r.status == 200;
  rec.e2e_s = std::chrono::duration<double>(Clock::now() - req.received).count();
  ch->respond(std::move(r));
  metrics_.record(rec);
  spdlog::info("POST /v1/embeddings {} tenant={} in={} inputs={} e2e_ms={:.1f}", rec.http_status, rec.tenant,
               rec.prompt_tokens, parsed.inputs.size(), rec.e2e_s * 1000);
  add_live(-1);
}

void Frontend::convert_tokens(bool to_ids, const HttpRequest& req, int tenant, std::shared_ptr<ResponseChannel> ch) {
  const RequestBuilder& builder = *backend_->builder();
  const tokenizer::Tokenizer& tok = builder.tokenizer();
  json body;
  if (to_ids) {
    TokenizeRequest parsed;
    std::vector<int32_t> ids;
    std::optional<ApiError> err = parse_tokenize_request(req.body, &parsed);
    if (!err) err = builder.tokenize(parsed, &ids);
    if (err) {
      reply_error(ch, tenant, *err, true);
      return;
    }
    auto piece = [&](int32_t id) { return std::string(tok.token_piece(id)); };
    if (parsed.llama_cpp) {
      json tokens = json::array();
      for (int32_t id : ids) tokens.push_back(parsed.with_pieces ? json{{"id", id}, {"piece", piece(id)}} : json(id));
      body = {{"tokens", std::move(tokens)}};
    } else {
      json strs = nullptr;
      if (parsed.token_strs) {
        strs = json::array();
        for (int32_t id : ids) strs.push_back(piece(id));
      }
      body = {{"count", ids.size()},
              {"max_model_len", backend_->context_length()},
              {"tokens", ids},
              {"token_strs", std::move(strs)}};
    }
  } else {
    DetokenizeRequest parsed;
    std::optional<ApiError> err = parse_detokenize_request(req.body, &parsed);
    if (!err) err = builder.check_model(parsed.model);
    if (!err) err = builder.check_vocabulary(parsed.tokens, "tokens");
    if (err) {
      reply_error(ch, tenant, *err, true);
      return;
    }
    // vLLM names the text "prompt", llama.cpp "content".
    const std::string text = tok.decode(parsed.tokens);
    body = {{"prompt", text}, {"content", text}};
  }
  ch->respond(json_response(200, body));
  spdlog::info("POST {} 200 tenant={}", to_ids ? "/tokenize" : "/detokenize", tenants_.tenant(tenant).name);
  add_live(-1);
}

// ------------------------------------------------------------------ pages

HttpResponse Frontend::health() const {
  const ServerState st = state_.load();
  json doc = {{"status", state_name(st)}, {"role", backend_->role()}};
  backend_->describe_health(st, doc);
  return json_response(st == ServerState::kReady ? 200 : 503, doc);
}

json Frontend::model_entry() const {
  if (state_.load() == ServerState::kLoading || backend_->builder() == nullptr) return nullptr;
  return {{"id", config_.served_model_name},
          {"object", "model"},
          {"created", started_unix_},
          {"owned_by", "ladder"},
          {"max_model_len", backend_->context_length()},
          {"ladder", backend_->model_facts()}};
}

HttpResponse Frontend::models(const std::string& path) const {
  const json entry = model_entry();
  if (path == "/v1/models") {
    json data = json::array();
    if (!entry.is_null()) data.push_back(entry);
    return json_response(200, {{"object", "list"}, {"data", data}});
  }
  // GET /v1/models/{id}: the model by the name it is served under (or its path).
  const std::string id = percent_decode(path.substr(std::string("/v1/models/").size()));
  if (entry.is_null() || (id != config_.served_model_name && id != config_.model_path)) {
    return error_response(
        not_found_error(fmt::format("the model '{}' does not exist: this server serves '{}' (GET /v1/models lists it)",
                                    id, config_.served_model_name),
                        "model_not_found"));
  }
  return json_response(200, entry);
}

HttpResponse Frontend::metrics_page(bool per_tenant) const {
  GaugeSnapshot g;
  g.state = state_name(state_.load());
  g.open_connections = http_->open_connections();
  {
    std::lock_guard lock(mu_);
    g.live_requests = live_;
  }
  backend_->fill_gauges(g);
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_.render(g, per_tenant);
  r.body += backend_->extra_metrics();
  return r;
}

// ------------------------------------------------------------- life cycle

void Frontend::add_live(int64_t n) {
  std::lock_guard lock(mu_);
  live_ += n;
}

void Frontend::drain() {
  const ServerState st = state_.load();
  if (st == ServerState::kDraining || st == ServerState::kStopped) return;
  {
    std::lock_guard lock(mu_);
    drain_started_ = Clock::now();
  }
  state_ = ServerState::kDraining;
  http_->stop_accepting();
}

void Frontend::check_drain() {
  if (state_.load() != ServerState::kDraining) return;
  int64_t n_live = 0;
  double elapsed_s = 0;
  bool cancel_now = false;
  {
    std::lock_guard lock(mu_);
    n_live = live_;
    elapsed_s = std::chrono::duration<double>(Clock::now() - drain_started_).count();
    if (elapsed_s > config_.drain_grace_s && !grace_spent_) {
      grace_spent_ = true;
      cancel_now = n_live > 0;
    }
  }
  if (cancel_now) {
    spdlog::warn("drain grace of {:.0f} s spent: cancelling {} requests", config_.drain_grace_s, n_live);
    backend_->cancel_all();
  }
  // Cancelled requests end with an error event; give those (and slow
  // readers) a bounded time to go out.
  if (n_live > 0 && elapsed_s > config_.drain_grace_s + 10) {
    spdlog::warn("stopping with {} responses not delivered", n_live);
    n_live = 0;
  }
  if (n_live > 0) return;
  if (state_.exchange(ServerState::kStopped) == ServerState::kStopped) return;
  spdlog::info("drained; stopping");
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

void Frontend::wait() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
  }
  stop_now();
  const std::string backend_line = backend_->stop();
  std::string summary;
  for (const auto& [status, n] : metrics_.requests_by_status()) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " x " + std::to_string(status);
  }
  spdlog::info("stopped: requests {}{}", summary.empty() ? "none" : summary, backend_line);
}

}  // namespace ladder::server
