#include "server/api_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "common/build_info.h"
#include "server/server_state.h"

namespace ladder::server {

using nlohmann::json;

namespace {

const char* state_name(ServerState s) {
  switch (s) {
    case ServerState::kLoading: return "loading";
    case ServerState::kReady: return "ready";
    case ServerState::kDraining: return "draining";
    case ServerState::kStopped: return "draining";
  }
  return "unknown";
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

HttpResponse json_response(int status, const json& doc) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(doc);
  return r;
}

std::string random_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  uint64_t v = salt ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(prefix) + buf;
}

}  // namespace

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.http_status;
  r.body = e.body();
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

ApiServer::ApiServer(ServeConfig config) : state_(std::make_unique<State>()) { state_->config = std::move(config); }

ApiServer::~ApiServer() {
  State& s = *state_;
  if (s.http) {
    s.http->stop();
    s.http->wait();
  }
  if (s.pump) s.pump->stop();
  if (s.engine) s.engine->shutdown();
}

Status ApiServer::start() {
  State& s = *state_;
  if (!s.config.tenants_file.empty()) {
    LADDER_ASSIGN_OR_RETURN(s.tenants, TenantRegistry::from_toml_file(s.config.tenants_file));
    spdlog::info("{} tenants from {}", s.tenants.size(), s.config.tenants_file);
  } else {
    spdlog::info("no --tenants file: serving one anonymous tenant, no API key required");
  }
  std::vector<TenantBudget> budgets;
  for (const auto& t : s.tenants.tenants()) {
    budgets.push_back({t.reserved_share, t.max_concurrent, t.max_queued, t.priority});
  }
  AdmissionConfig ac;
  ac.capacity = std::max(1, s.config.max_running);
  ac.max_queue = std::max(0, s.config.max_queue);
  ac.initial_service_ms = s.config.initial_service_ms;
  s.admission = std::make_unique<AdmissionController>(ac, std::move(budgets));

  s.http = std::make_unique<HttpServer>(
      s.config.http, [&s](HttpRequest req, std::shared_ptr<ResponseChannel> ch) { s.handle(std::move(req), std::move(ch)); },
      [](int status, const std::string& message) {
        ApiError e{status, message, status >= 500 ? "server_error" : "invalid_request_error", "", "", 0};
        e.code = status == 413 ? "payload_too_large" : status == 408 ? "request_timeout" : "bad_request";
        if (status == 503) e.retry_after_s = 1;
        return error_response(e);
      });
  LADDER_RETURN_IF_ERROR(s.http->start());
  s.http->on_shutdown_signal([this](int sig) {
    spdlog::info("signal {}: draining", sig);
    drain();
  });
  s.http->every(std::chrono::milliseconds(20), [&s] {
    s.expire_queued();
    s.check_drain();
  });
  return Status::ok();
}

uint16_t ApiServer::port() const { return state_->http->port(); }

Status ApiServer::load() {
  State& s = *state_;
  auto t0 = Clock::now();
  LADDER_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(s.config.model_path));
  s.file.emplace(std::move(file));
  LADDER_ASSIGN_OR_RETURN(s.model, model::LlamaModel::load(*s.file));
  LADDER_ASSIGN_OR_RETURN(s.tok, tokenizer::Tokenizer::from_gguf(*s.file));
  LADDER_ASSIGN_OR_RETURN(auto tmpl, tokenizer::chat_template_from_gguf(*s.file));
  s.chat_template.emplace(std::move(tmpl));
  engine::EngineConfig ec;
  ec.n_kv_blocks = s.config.kv_blocks;
  ec.kv_dtype = s.config.kv_dtype;
  ec.n_threads = s.config.threads;
  ec.scheduler.max_running = std::max(1, s.config.max_running);
  ec.scheduler.max_batch_tokens = s.config.max_batch_tokens;
  ec.max_requests = int64_t{s.config.max_running} + s.config.max_queue + 16;
  ec.model_digest = s.file->digest();
  ec.tokenizer_digest = s.tok->digest();
  s.pump = std::make_unique<StreamPump>();
  ec.on_step = [pump = s.pump.get()](const engine::StepReport&) { pump->wake(); };
  LADDER_ASSIGN_OR_RETURN(s.engine, engine::Engine::create(*s.model, ec));
  s.context_length = s.engine->context_length();
  s.max_input = s.config.max_input_tokens > 0 ? std::min(s.config.max_input_tokens, s.context_length - 1)
                                              : s.context_length - 1;
  s.max_output = s.config.max_output_tokens > 0 ? std::min(s.config.max_output_tokens, s.context_length)
                                                : s.context_length;
  if (s.config.served_model_name.empty()) {
    s.config.served_model_name = std::filesystem::path(s.config.model_path).stem().string();
  }
  spdlog::info("model {} loaded in {:.0f} ms: context {}, {} KV blocks, {} running slots, queue {}",
               s.config.served_model_name, ms_between(t0, Clock::now()), s.context_length, s.engine->n_kv_blocks(),
               s.config.max_running, s.config.max_queue);
  ServerState expected = ServerState::kLoading;
  if (!s.state.compare_exchange_strong(expected, ServerState::kReady)) {
    // Drained while loading: check_drain() finds no jobs and stops.
    spdlog::info("drain requested while loading");
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
  // Requests are only accepted once ready, so a server drained while loading
  // has nothing to finish; load() sees the state and does not go ready.
}

void ApiServer::wait() {
  State& s = *state_;
  {
    std::unique_lock lock(s.done_mu);
    s.done_cv.wait(lock, [&] { return s.finished; });
  }
  s.http->stop();
  s.http->wait();
  if (s.pump) s.pump->stop();
  if (s.engine) s.engine->shutdown();
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
    if (only("GET")) ch->respond(metrics_page());
  } else if (path == "/v1/models") {
    if (!only("GET")) return;
    if (authenticate(req) < 0) {
      record_rejection(-1, 401);
      ch->respond(error_response(unauthenticated("missing or invalid API key: send 'Authorization: Bearer <key>'")));
      return;
    }
    ch->respond(models());
  } else if (path == "/v1/completions") {
    if (only("POST")) handle_generate(ApiKind::kCompletion, req, std::move(ch));
  } else if (path == "/v1/chat/completions") {
    if (only("POST")) handle_generate(ApiKind::kChat, req, std::move(ch));
  } else {
    ch->respond(error_response(not_found_error("no route " + req.method + " " + path, "unknown_url")));
  }
}

HttpResponse ApiServer::State::health() const {
  ServerState st = state.load();
  json doc = {{"status", state_name(st)}};
  if (st == ServerState::kReady && engine) {
    engine::EngineMetrics m = engine->metrics();
    doc["running"] = m.running;
    doc["kv_blocks_used"] = m.kv_blocks_used;
    doc["kv_blocks_free"] = m.kv_blocks_free;
  }
  return json_response(st == ServerState::kReady ? 200 : 503, doc);
}

HttpResponse ApiServer::State::models() const {
  json data = json::array();
  if (model && engine) {
    // What a measurement of this server must name to be reproducible: the
    // exact weights and tokenizer, the KV format and the engine's revision.
    const engine::EngineConfig& ec = engine->config();
    data.push_back({{"id", config.served_model_name},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "ladder"},
                    {"max_model_len", context_length},
                    {"ladder",
                     {{"model_digest", ec.model_digest},
                      {"tokenizer_digest", ec.tokenizer_digest},
                      {"kv_dtype", std::string(tensor_type_name(ec.kv_dtype))},
                      {"kv_block_size", ec.block_size},
                      {"kv_blocks", engine->n_kv_blocks()},
                      {"version", version()},
                      {"revision", git_revision()}}}});
  }
  return json_response(200, {{"object", "list"}, {"data", data}});
}

HttpResponse ApiServer::State::metrics_page() const {
  GaugeSnapshot g;
  g.state = state_name(state.load());
  g.open_connections = http->open_connections();
  {
    std::lock_guard lock(mu);
    g.admission_queue = admission->total_queued();
  }
  if (engine) {
    engine::EngineMetrics m = engine->metrics();
    g.engine_waiting = m.queue_depth;
    g.running = m.running;
    g.kv_blocks_used = m.kv_blocks_used;
    g.kv_blocks_free = m.kv_blocks_free;
    g.prefix_hit_tokens = m.prefix_hit_tokens;
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics.render(g);
  return r;
}

int ApiServer::State::authenticate(const HttpRequest& req) const {
  if (!tenants.requires_key()) return 0;
  std::string auth = req.header("authorization");
  const std::string bearer = "Bearer ";
  if (auth.size() <= bearer.size() || auth.compare(0, bearer.size(), bearer) != 0) return -1;
  return tenants.authenticate(std::string_view(auth).substr(bearer.size()));
}

void ApiServer::State::record_rejection(int tenant, int status) {
  RequestRecord rec;
  rec.tenant = tenant >= 0 ? tenants.tenant(tenant).name : "unauthenticated";
  rec.http_status = status;
  metrics.record(rec);
}

void ApiServer::State::handle_generate(ApiKind kind, HttpRequest& req, std::shared_ptr<ResponseChannel> ch) {
  ServerState st = state.load();
  if (st != ServerState::kReady) {
    record_rejection(-1, 503);
    ch->respond(error_response(st == ServerState::kLoading
                                   ? unavailable("the model is still loading; retry shortly", "model_loading")
                                   : unavailable("the server is shutting down", "server_draining")));
    return;
  }
  auto job = std::make_shared<Job>();
  job->kind = kind;
  job->channel = ch;
  job->arrival = req.received;
  if (auto err = prepare(kind, req, *job)) {
    record_rejection(job->tenant, err->http_status);
    ch->respond(error_response(*err));
    return;
  }
  admit(std::move(job));
}

std::optional<ApiError> ApiServer::State::prepare(ApiKind kind, HttpRequest& req, Job& job) {
  job.tenant = authenticate(req);
  if (job.tenant < 0) {
    return unauthenticated(req.header("authorization").empty()
                               ? "missing API key: send 'Authorization: Bearer <key>'"
                               : "invalid API key");
  }
  const TenantConfig& tenant = tenants.tenant(job.tenant);

  std::string prompt_text;
  if (kind == ApiKind::kCompletion) {
    CompletionRequest r;
    if (auto err = parse_completion_request(req.body, &r)) return err;
    job.options = std::move(r.options);
    if (r.prompt_tokens) {
      for (int32_t id : *r.prompt_tokens) {
        if (id >= tok->n_vocab()) {
          return invalid_field("prompt", "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                             std::to_string(tok->n_vocab()));
        }
      }
      job.prompt = std::move(*r.prompt_tokens);
    } else {
      prompt_text = std::move(r.prompt);
    }
  } else {
    ChatRequest r;
    if (auto err = parse_chat_request(req.body, &r)) return err;
    job.options = std::move(r.options);
    tokenizer::ChatRenderInput in;
    for (const auto& m : r.messages) in.messages.push_back({{"role", m.role}, {"content", m.content}});
    in.bos_token = tok->bos_text();
    in.eos_token = tok->eos_text();
    auto rendered = chat_template->render(in);
    if (!rendered.is_ok()) return invalid_field("messages", "the chat template failed: " + rendered.status().message());
    // Message content is text: only the template's own markers become special tokens.
    job.prompt = tok->encode_rendered(*rendered, tok->add_bos_default());
  }
  const std::string& model_name = job.options.model;
  if (!model_name.empty() && model_name != config.served_model_name && model_name != config.model_path) {
    return not_found_error("the model '" + model_name + "' does not exist; this server serves '" +
                               config.served_model_name + "'",
                           "model_not_found");
  }
  if (job.prompt.empty()) {
    job.prompt = tok->encode(prompt_text, tok->add_bos_default(), /*parse_special=*/false);
  }
  if (job.prompt.empty()) return invalid_field("prompt", "the prompt is empty");
  auto n_prompt = static_cast<int64_t>(job.prompt.size());
  if (n_prompt > max_input) {
    ApiError e = invalid_field(kind == ApiKind::kChat ? "messages" : "prompt",
                               "this server accepts at most " + std::to_string(max_input) +
                                   " input tokens (the model's context is " + std::to_string(context_length) +
                                   "); the prompt has " + std::to_string(n_prompt));
    e.code = "context_length_exceeded";
    return e;
  }
  if (job.options.max_tokens) {
    if (*job.options.max_tokens > max_output) {
      return invalid_field("max_tokens", "max_tokens is " + std::to_string(*job.options.max_tokens) +
                                             "; this server allows at most " + std::to_string(max_output));
    }
    if (n_prompt + *job.options.max_tokens > context_length) {
      ApiError e = invalid_field("max_tokens", "the model's context is " + std::to_string(context_length) +
                                                   " tokens; the prompt has " + std::to_string(n_prompt) +
                                                   " and max_tokens asks for " +
                                                   std::to_string(*job.options.max_tokens) + " more");
      e.code = "context_length_exceeded";
      return e;
    }
    job.max_tokens = *job.options.max_tokens;
  } else {
    job.max_tokens = std::min(max_output, context_length - n_prompt);
  }

  std::string deadline = req.header("x-ladder-deadline-ms");
  if (!deadline.empty()) {
    char* end = nullptr;
    errno = 0;
    double ms = std::strtod(deadline.c_str(), &end);
    if (end == deadline.c_str() || *end != '\0' || errno != 0 || !(ms > 0) || ms > 1e9) {
      return invalid_field("x-ladder-deadline-ms", "header x-ladder-deadline-ms must be a positive number of ms");
    }
    job.deadline = job.arrival + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
  } else if (tenant.slo.ttft_ms > 0) {
    job.deadline = job.arrival + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double, std::milli>(tenant.slo.ttft_ms));
  }
  job.meta.kind = kind;
  job.meta.id = random_id(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-");
  job.meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  job.meta.model = config.served_model_name;
  job.text = std::make_unique<TextStream>(*tok, job.options.stop, job.options.logprobs);
  return std::nullopt;
}

}  // namespace ladder::server
