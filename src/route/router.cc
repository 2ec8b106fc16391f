#include "route/router.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/build_info.h"
#include "common/check.h"
#include "engine/admission.h"
#include "gguf/gguf_file.h"
#include "kv/prefix_cache.h"
#include "route/worker_pool.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/request_builder.h"
#include "server/server_state.h"
#include "server/tenants.h"
#include "server/work_queue.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ladder::route {

using nlohmann::json;
using server::ApiError;
using server::ServerState;
using server::HttpRequest;
using server::HttpResponse;
using server::ResponseChannel;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The last integer following `"name":` in text; -1 when absent.
int64_t last_int_field(const std::string& text, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = text.rfind(key);
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size());
}

// One client request, from its arrival to its last relayed byte.
struct Call {
  server::ApiKind kind = server::ApiKind::kCompletion;
  HttpRequest http;
  std::string api_key;
  int tenant = 0;
  server::GenerationPlan plan;
  std::shared_ptr<ResponseChannel> ch;
  uint64_t ticket = 0;
  std::atomic<bool> gone{false};
  bool queued = false;
  Clock::time_point arrival;
  Clock::time_point admitted;
};

// What the router adds to /metrics besides the server's series.
struct RouterCounters {
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

}  // namespace

struct Router::State {
  RouterConfig config;
  server::TenantRegistry tenants = server::TenantRegistry::anonymous();
  server::ServerMetrics metrics;
  RouterCounters counters;
  std::atomic<ServerState> phase{ServerState::kLoading};
  std::unique_ptr<server::HttpServer> http;
  std::optional<gguf::GgufFile> file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::optional<tokenizer::ChatTemplate> chat_template;
  std::unique_ptr<server::RequestBuilder> builder;  // set when ready
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<server::WorkQueue> prepare;
  std::unique_ptr<server::WorkQueue> relays;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<engine::AdmissionController> admission;  // set when ready
  std::map<uint64_t, std::shared_ptr<Call>> waiting;
  int64_t live = 0;
  int64_t relaying = 0;
  bool stopping = false;
  bool finished = false;
  Clock::time_point drain_started;
  std::thread prober;

  void handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch);
  void handle_generate(server::ApiKind kind, HttpRequest req, std::shared_ptr<ResponseChannel> ch);
  void prepare_call(const std::shared_ptr<Call>& call);
  void relay(const std::shared_ptr<Call>& call);
  // Ends a call that never reached a worker (refused, expired, withdrawn).
  void end_early(const std::shared_ptr<Call>& call, const ApiError& e);
  // A relayed call is over: its slot goes to whoever waits.
  void finish_call(const std::shared_ptr<Call>& call, const server::RequestRecord& rec, int64_t tokens);
  void expire_waiting();
  void check_drain();
  HttpResponse health() const;
  HttpResponse models() const;
  HttpResponse metrics_page(bool per_tenant) const;
  void add_live(int64_t n) {
    std::lock_guard lock(mu);
    live += n;
  }
};

Router::Router(RouterConfig config) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
}

Router::~Router() {
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
  }
  s.cv.notify_all();
  if (s.prober.joinable()) s.prober.join();
  if (s.http) {
    s.http->stop();
    s.http->wait();
  }
  if (s.prepare) s.prepare->stop();
  if (s.relays) s.relays->stop();
}

Status Router::start() {
  State& s = *state_;
  const RouterConfig& c = s.config;
  if (!c.tenants_file.empty()) {
    if (!c.api_key.empty()) return invalid_argument("--api-key and --tenants are exclusive");
    LADDER_ASSIGN_OR_RETURN(s.tenants, server::TenantRegistry::from_toml_file(c.tenants_file));
  } else if (!c.api_key.empty()) {
    s.tenants = server::TenantRegistry::single_key(c.api_key);
  }
  if (!c.admin_key.empty()) s.tenants.add_admin_key(c.admin_key);
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(c.model_path));
  s.file.emplace(std::move(file));
  LADDER_ASSIGN_OR_RETURN(s.tokenizer, tokenizer::Tokenizer::from_gguf(*s.file));
  LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate tmpl, tokenizer::chat_template_from_gguf(*s.file));
  s.chat_template.emplace(std::move(tmpl));
  if (s.config.served_model_name.empty()) {
    s.config.served_model_name = std::filesystem::path(c.model_path).stem().string();
  }
  LADDER_ASSIGN_OR_RETURN(s.pool, WorkerPool::create(c.prefill_urls, c.decode_urls));
  s.prepare = std::make_unique<server::WorkQueue>(c.prepare_threads, c.max_pending_prepare);

  s.http = std::make_unique<server::HttpServer>(
      c.http,
      [&s](HttpRequest req, std::shared_ptr<ResponseChannel> ch) { s.handle(std::move(req), std::move(ch)); },
      server::http_error_page);
  LADDER_RETURN_IF_ERROR(s.http->start());
  s.http->on_shutdown_signal([this](int sig) {
    spdlog::info("signal {}: draining", sig);
    drain();
  });
  s.http->every(std::chrono::milliseconds(20), [&s] {
    s.expire_waiting();
    s.check_drain();
  });
  s.prober = std::thread([&s] {
    std::unique_lock lock(s.mu);
    while (!s.stopping) {
      lock.unlock();
      s.pool->probe(std::min(2.0, s.config.worker_timeout_s));
      lock.lock();
      s.cv.wait_for(lock, std::chrono::duration<double>(s.config.probe_period_s),
                    [&s] { return s.stopping; });
    }
  });
  spdlog::info("router accepting connections on http://{}:{}; waiting for {} prefill and {} decode workers",
               c.http.host, s.http->port(), c.prefill_urls.size(), c.decode_urls.size());
  return Status::ok();
}

uint16_t Router::port() const {
  return state_->http->port();
}

Status Router::wait_for_workers(double timeout_s) {
  State& s = *state_;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Status st = s.pool->check_ready();
  while (!st.is_ok() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = s.pool->check_ready();
  }
  if (!st.is_ok()) return st;
  if (s.pool->model_digest() != s.file->digest()) {
    return failed_precondition(fmt::format("the workers serve model {} but --model {} is {}",
                                           s.pool->model_digest().substr(0, 12), s.config.model_path,
                                           s.file->digest().substr(0, 12)));
  }
  if (s.pool->tokenizer_digest() != s.tokenizer->digest()) {
    return failed_precondition("the workers' tokenizer is not the one in --model");
  }
  server::RequestBuilder::Model bm;
  bm.tokenizer = s.tokenizer.get();
  bm.chat_template = &*s.chat_template;
  bm.served_model_name = s.config.served_model_name;
  bm.model_path = s.config.model_path;
  bm.max_input_tokens = s.pool->max_input_tokens();
  s.builder = std::make_unique<server::RequestBuilder>(bm);

  engine::AdmissionConfig ac;
  ac.capacity = std::max(1, s.pool->total_decode_slots());
  ac.max_queue = s.config.max_queue;
  ac.initial_service_ms = s.config.initial_service_ms;
  std::vector<engine::TenantBudget> budgets;
  for (const auto& t : s.tenants.tenants()) {
    budgets.push_back({t.reserved_share, t.max_concurrent, t.max_queued, t.priority});
  }
  // One relay thread per running slot: each waits on its workers.
  s.relays = std::make_unique<server::WorkQueue>(ac.capacity, static_cast<size_t>(ac.capacity) * 2);
  {
    std::lock_guard lock(s.mu);
    s.admission = std::make_unique<engine::AdmissionController>(ac, budgets);
  }
  ServerState expected = ServerState::kLoading;
  s.phase.compare_exchange_strong(expected, ServerState::kReady);
  spdlog::info("router ready: model {}, KV {} (block {}), {} decode slots", s.config.served_model_name,
               s.pool->kv_format(), s.pool->block_size(), ac.capacity);
  return Status::ok();
}

void Router::drain() {
  State& s = *state_;
  const ServerState p = s.phase.load();
  if (p == ServerState::kDraining || p == ServerState::kStopped) return;
  {
    std::lock_guard lock(s.mu);
    s.drain_started = Clock::now();
  }
  s.phase = ServerState::kDraining;
  s.http->stop_accepting();
}

void Router::wait() {
  State& s = *state_;
  {
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, [&] { return s.finished; });
    s.stopping = true;
  }
  s.cv.notify_all();
  if (s.prober.joinable()) s.prober.join();
  s.http->stop();
  s.http->wait();
  s.prepare->stop();
  if (s.relays) s.relays->stop();
  spdlog::info("router stopped");
}

// ---------------------------------------------------------------- routing

void Router::State::handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch) {
  const std::string path = req.path();
  auto only = [&](const char* method) {
    if (req.method == method) return true;
    HttpResponse r = server::error_response(
        server::method_not_allowed("method " + req.method + " is not allowed on " + path));
    r.headers.emplace_back("Allow", method);
    ch->respond(std::move(r));
    return false;
  };
  if (path == "/health") {
    if (only("GET")) ch->respond(health());
  } else if (path == "/metrics") {
    if (!only("GET")) return;
    const std::string key = server::bearer_key(req);
    ch->respond(metrics_page(!key.empty() && tenants.is_admin(key)));
  } else if (path == "/v1/models") {
    if (!only("GET")) return;
    if (tenants.authenticate(server::bearer_key(req)) < 0) {
      ch->respond(server::error_response(server::unauthenticated("missing or invalid API key")));
      return;
    }
    ch->respond(models());
  } else if (path == "/v1/completions") {
    if (only("POST")) handle_generate(server::ApiKind::kCompletion, std::move(req), std::move(ch));
  } else if (path == "/v1/chat/completions") {
    if (only("POST")) handle_generate(server::ApiKind::kChat, std::move(req), std::move(ch));
  } else {
    ch->respond(server::error_response(
        server::not_found_error("no route " + req.method + " " + path, "unknown_url")));
  }
}

void Router::State::handle_generate(server::ApiKind kind, HttpRequest req,
                                    std::shared_ptr<ResponseChannel> ch) {
  const ServerState p = phase.load();
  if (p != ServerState::kReady) {
    ApiError e = p == ServerState::kLoading
                     ? server::unavailable("the workers are not ready yet; retry shortly", "model_loading")
                     : server::unavailable("the router is shutting down", "server_draining");
    ch->respond(server::error_response(e));
    return;
  }
  auto call = std::make_shared<Call>();
  call->kind = kind;
  call->api_key = server::bearer_key(req);
  call->tenant = tenants.authenticate(call->api_key);
  call->arrival = req.received;
  if (call->tenant < 0) {
    ch->respond(server::error_response(server::unauthenticated(
        req.header("authorization").empty() ? "missing API key: send 'Authorization: Bearer <key>'"
                                            : "invalid API key")));
    return;
  }
  call->http = std::move(req);
  call->ch = std::move(ch);
  add_live(1);
  std::weak_ptr<Call> weak = call;
  call->ch->on_end([this, weak](server::Delivery how) {
    auto c = weak.lock();
    if (!c || how != server::Delivery::kClientGone) return;
    c->gone = true;
    bool withdrawn = false;
    {
      std::lock_guard lock(mu);
      auto it = waiting.find(c->ticket);
      if (c->ticket != 0 && it != waiting.end()) {
        admission->withdraw(c->ticket);
        waiting.erase(it);
        withdrawn = true;
      }
    }
    if (withdrawn)
      end_early(c, ApiError{499, "the client went away", "invalid_request_error", "", "client_gone", 0});
  });
  if (!prepare->post([this, call] { prepare_call(call); })) {
    end_early(call, server::unavailable("too many requests are waiting to be tokenized; retry shortly",
                                        "server_overloaded"));
  }
}

void Router::State::end_early(const std::shared_ptr<Call>& call, const ApiError& e) {
  server::RequestRecord rec;
  rec.tenant = tenants.tenant(call->tenant).name;
  rec.http_status = e.http_status;
  rec.rejected_early = e.http_status == 429;
  metrics.record(rec);
  if (!call->gone) call->ch->respond(server::error_response(e));
  add_live(-1);
}

void Router::State::prepare_call(const std::shared_ptr<Call>& call) {
  if (call->gone)
    return end_early(call,
                     ApiError{499, "the client went away", "invalid_request_error", "", "client_gone", 0});
  if (auto err =
          builder->build(call->kind, call->http, call->tenant, tenants.tenant(call->tenant), &call->plan)) {
    return end_early(call, *err);
  }
  engine::AdmissionRequest ar;
  ar.tenant = call->tenant;
  const int64_t out = call->plan.request.stop.max_tokens > 0 ? call->plan.request.stop.max_tokens : 256;
  ar.cost_tokens = static_cast<int64_t>(call->plan.request.prompt.size()) + out;
  if (call->plan.request.scheduling.deadline != Clock::time_point::max()) {
    ar.deadline = call->plan.request.scheduling.deadline;
  }
  engine::AdmissionDecision d;
  {
    std::lock_guard lock(mu);
    d = admission->offer(ar, Clock::now());
    call->ticket = d.ticket;
    if (d.outcome == engine::AdmissionOutcome::kQueued) {
      call->queued = true;
      waiting.emplace(d.ticket, call);
    } else if (d.outcome == engine::AdmissionOutcome::kAdmitted) {
      ++relaying;
    }
  }
  if (d.outcome == engine::AdmissionOutcome::kRejected) {
    return end_early(call, server::rate_limited(d.reason, d.code, d.retry_after_s));
  }
  if (d.outcome == engine::AdmissionOutcome::kAdmitted) {
    call->admitted = Clock::now();
    const bool queued = relays->post([this, call] { relay(call); });
    LADDER_CHECK(queued, "the relay queue holds every running slot twice over");
  }
}

void Router::State::expire_waiting() {
  if (admission == nullptr) return;
  std::vector<std::shared_ptr<Call>> expired;
  {
    std::lock_guard lock(mu);
    if (admission == nullptr) return;
    for (uint64_t id : admission->expire(Clock::now())) {
      auto it = waiting.find(id);
      if (it == waiting.end()) continue;
      expired.push_back(std::move(it->second));
      waiting.erase(it);
    }
  }
  for (auto& c : expired) {
    end_early(c, server::rate_limited("the deadline passed while the request waited in the queue",
                                      "deadline_exceeded", 1));
  }
}

void Router::State::finish_call(const std::shared_ptr<Call>& call, const server::RequestRecord& rec,
                                int64_t tokens) {
  metrics.record(rec);
  std::vector<std::shared_ptr<Call>> next;
  {
    std::lock_guard lock(mu);
    --relaying;
    for (uint64_t id : admission->finish(call->ticket, tokens, Clock::now())) {
      auto it = waiting.find(id);
      LADDER_CHECK(it != waiting.end(), "an admitted ticket has no waiting call");
      next.push_back(std::move(it->second));
      waiting.erase(it);
      ++relaying;
    }
    live -= 1;
  }
  for (auto& c : next) {
    c->admitted = Clock::now();
    const bool queued = relays->post([this, c] { relay(c); });
    LADDER_CHECK(queued, "the relay queue holds every running slot twice over");
  }
}

// ------------------------------------------------------------------ relay

void Router::State::relay(const std::shared_ptr<Call>& call) {
  server::RequestRecord rec;
  rec.tenant = tenants.tenant(call->tenant).name;
  rec.queued_s = std::chrono::duration<double>(call->admitted - call->arrival).count();
  const std::vector<int32_t>& prompt = call->plan.request.prompt;
  rec.prompt_tokens = static_cast<int64_t>(prompt.size());

  // The keys of the prompt's full blocks before its last token: what a prefill
  // worker sends and what affinity is judged by.
  const int bs = pool->block_size();
  const kv::BlockKey ns = kv::namespace_digest(
      {call->plan.request.cache_scope, pool->model_digest(), pool->tokenizer_digest(), pool->kv_format()});
  std::vector<kv::BlockKey> keys;
  const size_t n_full = (prompt.size() - 1) / static_cast<size_t>(bs);
  kv::PrefixCache::extend_keys(ns, std::span(prompt).first(n_full * static_cast<size_t>(bs)), bs, keys);

  auto fail = [&](const ApiError& e) {
    rec.http_status = e.http_status;
    if (!call->gone) call->ch->respond(server::error_response(e));
    finish_call(call, rec, rec.prompt_tokens);
  };
  auto remaining_ms = [&]() -> std::optional<double> {
    if (call->plan.request.scheduling.deadline == Clock::time_point::max()) return std::nullopt;
    const double ms =
        std::chrono::duration<double, std::milli>(call->plan.request.scheduling.deadline - Clock::now())
            .count();
    return std::max(1.0, ms);
  };

  std::optional<Placement> decode = pool->place(WorkerRole::kDecode, keys);
  if (!decode) return fail(server::unavailable("no decode worker is available", "no_worker"));
  counters.affinity_blocks_decode += decode->affinity_blocks;

  // 1. Prefill elsewhere, KV straight to the decode worker.
  // Nothing to move when the decode worker is believed to hold every block.
  std::string transfer_id;
  bool prefilled = decode->affinity_blocks >= keys.size();
  for (int attempt = 0; attempt < 3 && !prefilled && !call->gone; ++attempt) {
    std::optional<Placement> prefill = pool->place(WorkerRole::kPrefill, keys);
    if (!prefill) break;
    const std::string id = server::random_response_id("kv-");
    // Blocks the decode worker is believed to hold need not travel; if it
    // evicted them meanwhile, it computes them (slower, the same output).
    json body = {{"prompt", prompt},
                 {"transfer_id", id},
                 {"decode_kv", decode->kv_address},
                 {"skip_blocks", decode->affinity_blocks}};
    if (auto ms = remaining_ms()) body["deadline_ms"] = *ms;
    harness::HttpRequestSpec spec;
    spec.method = "POST";
    spec.path = "/internal/prefill";
    spec.api_key = call->api_key;
    spec.body = body.dump();
    spec.timeout_s = config.worker_timeout_s;
    spec.stop = [call] { return call->gone.load(); };
    auto r = harness::http_fetch(prefill->endpoint, spec);
    pool->release(*prefill);
    if (!r.is_ok()) {
      ++counters.failures_prefill;
      pool->mark_failed(*prefill, r.status().message());
      continue;  // another prefill worker, or the decode worker alone
    }
    auto doc = json::parse(r->body, nullptr, false);
    if (r->status == 200 && doc.is_object()) {
      prefilled = true;
      counters.affinity_blocks_prefill += prefill->affinity_blocks;
      pool->record_blocks(*prefill, keys);
      if (doc.value("blocks", 0) > 0) {
        transfer_id = id;
        pool->record_blocks(*decode, keys);
        ++counters.transfers;
        counters.transfer_blocks += doc.value("blocks", uint64_t{0});
        counters.transfer_bytes += doc.value("bytes", uint64_t{0});
        counters.transfer_micros += static_cast<uint64_t>(doc.value("transfer_ms", 0.0) * 1000);
        counters.prefill_micros += static_cast<uint64_t>(doc.value("prefill_ms", 0.0) * 1000);
      }
      break;
    }
    const std::string code = doc.is_object() && doc.contains("error") ? doc["error"].value("code", "") : "";
    if (r->status == 502 && code == "kv_transfer_failed") {
      // The decode worker could not take the blocks: another one, if any.
      ++counters.failures_decode;
      pool->mark_failed(*decode,
                        "KV transfer failed: " + (doc.is_object() ? doc["error"].value("message", "") : ""));
      pool->release(*decode);
      decode = pool->place(WorkerRole::kDecode, keys);
      if (!decode) return fail(server::unavailable("no decode worker is available", "no_worker"));
      continue;
    }
    // The prefill worker's own verdict on this request (429, 400, ...) is the router's.
    pool->release(*decode);
    HttpResponse out;
    out.status = r->status;
    out.body = r->body;
    if (r->status == 429) out.headers.emplace_back("Retry-After", "1");
    rec.http_status = r->status;
    rec.rejected_early = r->status == 429;
    if (!call->gone) call->ch->respond(std::move(out));
    return finish_call(call, rec, rec.prompt_tokens);
  }
  if (!prefilled) ++counters.prefill_fallbacks;

  // 2. Decode: forward the client's request and relay the response.
  harness::HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = call->kind == server::ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions";
  spec.api_key = call->api_key;
  spec.body = call->http.body;
  if (!transfer_id.empty()) spec.headers.emplace_back("x-ladder-kv-transfer", transfer_id);
  if (auto ms = remaining_ms()) spec.headers.emplace_back("x-ladder-deadline-ms", fmt::format("{:.3f}", *ms));
  spec.timeout_s = config.worker_timeout_s;
  spec.stop = [call] { return call->gone.load(); };
  int status = 0;
  bool streaming = false;
  std::string content_type;
  std::string body;  // non-streaming: the whole body
  std::string tail;  // streaming: the last bytes, for [DONE] and usage
  std::optional<Clock::time_point> first_byte;
  const Status st = harness::http_stream(
      decode->endpoint, spec,
      [&](int s, std::string_view ct) {
        status = s;
        content_type = std::string(ct);
        streaming = content_type.rfind("text/event-stream", 0) == 0;
        if (streaming && !call->gone) call->ch->start_stream(status, content_type, {});
      },
      [&](std::string_view bytes) {
        if (!first_byte) first_byte = Clock::now();
        if (!streaming) {
          body.append(bytes);
          return;
        }
        if (!call->gone) call->ch->send(std::string(bytes));
        tail.append(bytes);
        if (tail.size() > 8192) tail.erase(0, tail.size() - 8192);
      });
  pool->release(*decode);
  rec.e2e_s = seconds_since(call->arrival);
  if (first_byte) rec.ttft_s = std::chrono::duration<double>(*first_byte - call->arrival).count();
  const std::string& seen = streaming ? tail : body;
  const bool complete =
      st.is_ok() && (streaming ? seen.find("data: [DONE]") != std::string::npos : json::accept(body));
  if (call->gone) {
    rec.http_status = 499;
    return finish_call(call, rec, rec.prompt_tokens);
  }
  if (!complete) {
    ++counters.failures_decode;
    const std::string why = st.is_ok() ? "its response ended early" : st.message();
    pool->mark_failed(*decode, why);
    const ApiError e{
        502, "the decode worker failed while serving this request: " + why, "server_error", "", "worker_lost",
        0};
    rec.http_status = 502;
    if (streaming) {
      call->ch->send(server::sse_data(json::parse(e.body())));
      call->ch->send(server::kSseDone);
      call->ch->finish();
    } else {
      call->ch->respond(server::error_response(e));
    }
    return finish_call(call, rec, rec.prompt_tokens);
  }
  if (streaming) {
    call->ch->finish();
  } else {
    HttpResponse out;
    out.status = status;
    out.content_type = content_type.empty() ? "application/json" : content_type;
    out.body = std::move(body);
    if (status == 429) out.headers.emplace_back("Retry-After", "1");
    call->ch->respond(std::move(out));
  }
  rec.http_status = status;
  rec.rejected_early = status == 429;
  rec.completion_tokens = std::max<int64_t>(0, last_int_field(seen, "completion_tokens"));
  rec.cached_tokens = std::max<int64_t>(0, last_int_field(seen, "cached_tokens"));
  rec.finished = status == 200;
  const server::TenantConfig& tc = tenants.tenant(call->tenant);
  rec.slo_met =
      rec.finished && (tc.slo.ttft_ms <= 0 || (rec.ttft_s >= 0 && rec.ttft_s * 1000 <= tc.slo.ttft_ms));
  finish_call(call, rec, rec.prompt_tokens + rec.completion_tokens);
}

// ------------------------------------------------------------------ pages

HttpResponse Router::State::health() const {
  const ServerState p = phase.load();
  json workers = json::array();
  for (const WorkerInfo& w : pool->snapshot()) {
    workers.push_back({{"url", w.url},
                       {"role", worker_role_name(w.role)},
                       {"healthy", w.healthy},
                       {"status", w.status},
                       {"in_flight", w.in_flight},
                       {"kv_blocks_used", w.kv_blocks_used}});
  }
  HttpResponse r;
  r.status = p == ServerState::kReady ? 200 : 503;
  r.body = server::dump_json({{"status", server::state_name(p)}, {"role", "router"}, {"workers", workers}});
  return r;
}

HttpResponse Router::State::models() const {
  json data = json::array();
  if (phase.load() == ServerState::kReady) {
    data.push_back({{"id", config.served_model_name},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "ladder"},
                    {"ladder",
                     {{"model_digest", pool->model_digest()},
                      {"tokenizer_digest", pool->tokenizer_digest()},
                      {"kv_format", pool->kv_format()},
                      {"kv_block_size", pool->block_size()},
                      {"version", version()},
                      {"revision", git_revision()},
                      {"config",
                       {{"rung", 2},
                        {"role", "router"},
                        {"prefill_workers", config.prefill_urls},
                        {"decode_workers", config.decode_urls},
                        {"max_queue", config.max_queue},
                        {"tenants", tenants.size()}}}}}});
  }
  HttpResponse r;
  r.body = server::dump_json({{"object", "list"}, {"data", data}});
  return r;
}

HttpResponse Router::State::metrics_page(bool per_tenant) const {
  server::GaugeSnapshot g;
  g.state = server::state_name(phase.load());
  g.open_connections = http->open_connections();
  {
    std::lock_guard lock(mu);
    g.live_requests = live;
    g.admission_queue = static_cast<int64_t>(waiting.size());
    g.running = relaying;
  }
  std::string out = metrics.render(g, per_tenant);
  out +=
      "# HELP ladder_router_workers Workers behind the router by role and health.\n"
      "# TYPE ladder_router_workers gauge\n";
  std::map<std::pair<std::string, bool>, int> n;
  for (const char* role : {"prefill", "decode"}) {
    n[{role, true}] = 0;
    n[{role, false}] = 0;
  }
  for (const WorkerInfo& w : pool->snapshot()) ++n[{worker_role_name(w.role), w.healthy}];
  for (const auto& [k, v] : n) {
    out += fmt::format("ladder_router_workers{{role=\"{}\",state=\"{}\"}} {}\n", k.first,
                       k.second ? "healthy" : "unhealthy", v);
  }
  auto counter = [&](const char* name, const char* help, const std::string& labels, double v) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0}{2} {3}\n", name, help, labels, v);
  };
  counter("ladder_router_transfers_total", "Requests whose prompt KV went from a prefill to a decode worker.",
          "", static_cast<double>(counters.transfers.load()));
  counter("ladder_router_transfer_blocks_total", "KV blocks transferred for routed requests.", "",
          static_cast<double>(counters.transfer_blocks.load()));
  counter("ladder_router_transfer_bytes_total", "KV transfer wire bytes for routed requests.", "",
          static_cast<double>(counters.transfer_bytes.load()));
  counter("ladder_router_transfer_seconds_total", "Time spent sending KV (connect to acknowledgement).", "",
          static_cast<double>(counters.transfer_micros.load()) / 1e6);
  counter("ladder_router_prefill_seconds_total", "Time prefill workers took to compute routed prompts.", "",
          static_cast<double>(counters.prefill_micros.load()) / 1e6);
  counter(
      "ladder_router_prefill_fallbacks_total",
      "Requests with blocks to send whose prompt the decode worker computed (no prefill worker answered).",
      "", static_cast<double>(counters.prefill_fallbacks.load()));
  out +=
      "# HELP ladder_router_affinity_blocks_total Leading prompt blocks the chosen worker was believed to "
      "hold.\n"
      "# TYPE ladder_router_affinity_blocks_total counter\n";
  out += fmt::format("ladder_router_affinity_blocks_total{{role=\"prefill\"}} {}\n",
                     counters.affinity_blocks_prefill.load());
  out += fmt::format("ladder_router_affinity_blocks_total{{role=\"decode\"}} {}\n",
                     counters.affinity_blocks_decode.load());
  out +=
      "# HELP ladder_router_worker_failures_total Worker calls that failed, by role.\n"
      "# TYPE ladder_router_worker_failures_total counter\n";
  out += fmt::format("ladder_router_worker_failures_total{{role=\"prefill\"}} {}\n",
                     counters.failures_prefill.load());
  out += fmt::format("ladder_router_worker_failures_total{{role=\"decode\"}} {}\n",
                     counters.failures_decode.load());
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = std::move(out);
  return r;
}

void Router::State::check_drain() {
  if (phase.load() != ServerState::kDraining) return;
  int64_t n_live = 0;
  double elapsed_s = 0;
  {
    std::lock_guard lock(mu);
    n_live = live;
    elapsed_s = seconds_since(drain_started);
  }
  if (n_live > 0 && elapsed_s < config.drain_grace_s) return;
  if (n_live > 0) spdlog::warn("drain grace spent: stopping with {} requests unanswered", n_live);
  if (phase.exchange(ServerState::kStopped) == ServerState::kStopped) return;
  std::lock_guard lock(mu);
  finished = true;
  cv.notify_all();
}

}  // namespace ladder::route
