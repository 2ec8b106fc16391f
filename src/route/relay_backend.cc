#include "route/relay_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/build_info.h"
#include "common/check.h"
#include "common/sha256.h"
#include "kv/prefix_cache.h"
#include "server/deadline.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace ladder::route {

using nlohmann::json;
using server::ApiError;
using server::HttpResponse;
using server::RequestRecord;
using Clock = std::chrono::steady_clock;

// One client request, from its plan to its last relayed byte.
struct RelayBackend::Call {
  server::GenerationPlan plan;
  std::string body;     // the client's JSON, relayed to the decode worker
  std::string api_key;  // the client's key, which the workers check again
  std::shared_ptr<server::ResponseChannel> ch;
  server::SettledFn settled;
  uint64_t ticket = 0;
  std::atomic<bool> gone{false};
  Clock::time_point admitted;
};

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

ApiError client_gone_error() { return ApiError{499, "the client went away", "invalid_request_error", "", "client_gone", 0}; }

// The last object of a response that has a "ladder" block: the whole body,
// or of a stream the last such event (a chat or completion chunk), or the
// response object a Responses API stream ends with.
json final_object(const std::string& seen, bool streaming) {
  if (!streaming) {
    json doc = json::parse(seen, nullptr, false);
    return doc.is_object() && doc.contains("ladder") ? doc : json();
  }
  json found;
  size_t at = 0;
  while ((at = seen.find("data: {", at)) != std::string::npos) {
    const size_t end = seen.find("\n\n", at);
    if (end == std::string::npos) break;
    json ev = json::parse(seen.substr(at + 6, end - at - 6), nullptr, false);
    if (ev.is_object() && ev.contains("response") && ev["response"].contains("ladder")) {
      found = ev["response"];
    } else if (ev.is_object() && ev.contains("ladder")) {
      found = std::move(ev);
    }
    at = end;
  }
  return found;
}

// Where a Responses API stream's terminal event begins in `seen`, searching
// from `from`; npos: not (yet) there.
size_t terminal_event_at(const std::string& seen, size_t from) {
  size_t at = std::string::npos;
  for (const char* marker : {"event: response.completed\n", "event: response.incomplete\n",
                             "event: response.failed\n"}) {
    at = std::min(at, seen.find(marker, from));
  }
  return at;
}

// A stream ended as its API ends one: [DONE], or a Responses API stream's
// terminal event.
bool stream_complete(const std::string& seen) {
  return seen.find("data: [DONE]") != std::string::npos || terminal_event_at(seen, 0) != std::string::npos;
}

}  // namespace

RelayBackend::RelayBackend(const RouterConfig& config, const server::TenantRegistry& tenants)
    : config_(config), tenants_(tenants), policy_(config.prefill_mode) {}

RelayBackend::~RelayBackend() { stop(); }

Status RelayBackend::open() {
  // The tenants are loaded by now: the TPOT objective may come from them.
  tpot_objective_ms_ = config_.tpot_ms;
  if (config_.tpot_ms <= 0) {  // no --tpot-ms: the tightest tenant TPOT SLO, if any
    for (size_t t = 0; t < tenants_.size(); ++t) {
      const double ms = tenants_.tenant(static_cast<int>(t)).slo.tpot_ms;
      if (ms > 0 && (tpot_objective_ms_ <= 0 || ms < tpot_objective_ms_)) tpot_objective_ms_ = ms;
    }
  }
  {
    std::lock_guard lock(policy_mu_);
    policy_ = PrefillPolicy(config_.prefill_mode, tpot_objective_ms_);
  }
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(config_.model_path));
  file_.emplace(std::move(file));
  LADDER_ASSIGN_OR_RETURN(tokenizer_, tokenizer::Tokenizer::from_gguf(*file_));
  LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate tmpl, tokenizer::chat_template_for(*file_, config_.chat_template));
  chat_template_.emplace(std::move(tmpl));
  LADDER_ASSIGN_OR_RETURN(pool_, WorkerPool::create(config_.prefill_urls, config_.decode_urls));
  prober_ = std::thread([this] {
    std::unique_lock lock(mu_);
    auto next_probe = Clock::now();
    while (!stopping_) {
      if (Clock::now() >= next_probe) {
        lock.unlock();
        pool_->probe(std::min(2.0, config_.worker_timeout_s));
        lock.lock();
        next_probe = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(config_.probe_period_s));
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stopping_; });
      lock.unlock();
      expire_waiting();
      lock.lock();
    }
  });
  return Status::ok();
}

Status RelayBackend::start_serving() {
  if (pool_->model_digest() != file_->digest()) {
    return failed_precondition(fmt::format("the workers serve model {} but --model {} is {}",
                                           pool_->model_digest().substr(0, 12), config_.model_path,
                                           file_->digest().substr(0, 12)));
  }
  if (pool_->tokenizer_digest() != tokenizer_->digest()) {
    return failed_precondition("the workers' tokenizer is not the one in --model");
  }
  // The router renders prompts for placement, admission and /tokenize: with
  // the template the workers render them with.
  if (pool_->chat_template_digest() != sha256_hex(chat_template_->source())) {
    return failed_precondition("the decode workers render chat prompts with another chat template than this router "
                               "(or with different ones): give ladder route the workers' --chat-template");
  }
  // A prompt's KV from a prefill worker continues on a decode worker: the
  // split decodes what one worker would only where both sum in one order.
  if (!pool_->kernels()) {
    std::string each;
    for (const WorkerInfo& w : pool_->snapshot()) each += fmt::format("\n  {} {}", w.url, w.kernels);
    return failed_precondition(
        "the workers' kernels sum in different orders (kernel fingerprints below), so a split request "
        "would not decode what one worker decodes: run every worker on one CPU type, or align them "
        "(LADDER_BF16_DOT=0 keeps BF16 weights off AVX512-BF16 dot products; `ladder info` prints each "
        "machine's fingerprint)" +
        each);
  }
  server::PlannerOptions po;
  po.served_model_name = config_.served_model_name;
  po.model_path = config_.model_path;
  po.max_input_tokens = pool_->max_input_tokens();
  po.tool_preamble = pool_->tool_preamble();
  planner_ = std::make_unique<server::Planner>(*tokenizer_, *chat_template_, po);

  engine::AdmissionConfig ac;
  ac.capacity = std::max(1, pool_->total_decode_slots());
  ac.max_queue = config_.max_queue;
  ac.initial_service_ms = config_.initial_service_ms;
  // One relay thread per running slot: each waits on its workers.
  relays_ = std::make_unique<server::WorkQueue>(ac.capacity, static_cast<size_t>(ac.capacity) * 2);
  {
    std::lock_guard lock(mu_);
    admission_ = std::make_unique<engine::AdmissionController>(ac, server::tenant_budgets(tenants_));
  }
  builder_ = &planner_->builder();
  spdlog::info("router ready: model {}, KV {} (block {}), {} decode slots", config_.served_model_name,
               pool_->kv_format(), pool_->block_size(), ac.capacity);
  return Status::ok();
}

const server::RequestBuilder* RelayBackend::builder() const { return builder_.load(); }

// --------------------------------------------------------------- admission

void RelayBackend::serve(server::GenerationPlan plan, const server::HttpRequest& http,
                         std::shared_ptr<server::ResponseChannel> channel, server::SettledFn settled) {
  auto call = std::make_shared<Call>();
  call->plan = std::move(plan);
  call->body = http.body;
  call->api_key = server::bearer_key(http);
  call->ch = std::move(channel);
  call->settled = std::move(settled);
  std::weak_ptr<Call> weak = call;
  call->ch->on_end([this, weak](server::Delivery how) {
    auto c = weak.lock();
    if (!c || how != server::Delivery::kClientGone) return;
    c->gone = true;
    bool withdrawn = false;
    {
      std::lock_guard lock(mu_);
      auto it = waiting_.find(c->ticket);
      if (c->ticket != 0 && it != waiting_.end()) {
        admission_->withdraw(c->ticket);
        waiting_.erase(it);
        withdrawn = true;
      }
    }
    if (withdrawn) end_early(c, client_gone_error(), false);
  });
  if (call->gone) return end_early(call, client_gone_error(), false);
  admit(call);
}

void RelayBackend::admit(const std::shared_ptr<Call>& call) {
  const engine::Request& r = call->plan.request;
  engine::AdmissionRequest ar;
  ar.tenant = call->plan.tenant;
  // Its cost in tokens: the prompt and what it may generate (max_tokens, or
  // the rest of the context).
  const int64_t prompt = static_cast<int64_t>(r.prompt.size());
  const int64_t room = std::max<int64_t>(1, pool_->context_length() - prompt);
  ar.cost_tokens = prompt + (r.stop.max_tokens > 0 ? std::min<int64_t>(r.stop.max_tokens, room) : room);
  if (r.scheduling.deadline != Clock::time_point::max()) ar.deadline = r.scheduling.deadline;
  engine::AdmissionDecision d;
  {
    std::lock_guard lock(mu_);
    d = admission_->offer(ar, Clock::now());
    call->ticket = d.ticket;
    if (d.outcome == engine::AdmissionOutcome::kQueued) {
      waiting_.emplace(d.ticket, call);
    } else if (d.outcome == engine::AdmissionOutcome::kAdmitted) {
      ++relaying_;
    }
  }
  if (d.outcome == engine::AdmissionOutcome::kRejected) {
    return end_early(call, server::rate_limited(d.reason, d.code, d.retry_after_s), false);
  }
  if (d.outcome == engine::AdmissionOutcome::kAdmitted) start_relays({call});
}

void RelayBackend::start_relays(std::vector<std::shared_ptr<Call>> calls) {
  for (auto& c : calls) {
    c->admitted = Clock::now();
    const bool queued = relays_->post([this, c] { relay(c); });
    LADDER_CHECK(queued, "the relay queue holds every running slot twice over");
  }
}

void RelayBackend::expire_waiting() {
  std::vector<std::shared_ptr<Call>> expired;
  {
    std::lock_guard lock(mu_);
    if (admission_ == nullptr) return;
    for (uint64_t id : admission_->expire(Clock::now())) {
      auto it = waiting_.find(id);
      if (it == waiting_.end()) continue;
      expired.push_back(std::move(it->second));
      waiting_.erase(it);
    }
  }
  for (auto& c : expired) {
    end_early(c, server::rate_limited("the deadline passed while the request waited in the queue",
                                      "deadline_exceeded", 1),
              false);
  }
}

void RelayBackend::end_early(const std::shared_ptr<Call>& call, const ApiError& e, bool was_running) {
  RequestRecord rec;
  rec.tenant = tenants_.tenant(call->plan.tenant).name;
  rec.http_status = e.http_status;
  rec.rejected_early = e.http_status == 429;
  rec.prompt_tokens = static_cast<int64_t>(call->plan.request.prompt.size());
  if (!call->gone) call->ch->respond(server::error_response(e));
  if (was_running) {
    const int64_t tokens = rec.prompt_tokens;
    return finish_call(call, std::move(rec), tokens);
  }
  call->settled(std::move(rec));
}

void RelayBackend::finish_call(const std::shared_ptr<Call>& call, RequestRecord rec, int64_t tokens) {
  std::vector<std::shared_ptr<Call>> next;
  {
    std::lock_guard lock(mu_);
    --relaying_;
    for (uint64_t id : admission_->finish(call->ticket, tokens, Clock::now())) {
      auto it = waiting_.find(id);
      LADDER_CHECK(it != waiting_.end(), "an admitted ticket has no waiting call");
      next.push_back(std::move(it->second));
      waiting_.erase(it);
      ++relaying_;
    }
  }
  call->settled(std::move(rec));
  start_relays(std::move(next));
}

void RelayBackend::cancel_all() {
  cancelled_ = true;
  std::vector<std::shared_ptr<Call>> queued;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : waiting_) {
      admission_->withdraw(id);
      queued.push_back(std::move(c));
    }
    waiting_.clear();
  }
  for (auto& c : queued) end_early(c, server::unavailable("the server is shutting down", "server_draining"), false);
}

std::string RelayBackend::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (prober_.joinable()) prober_.join();
  if (relays_) relays_->stop();
  return "";
}

// ------------------------------------------------------------------- relay

void RelayBackend::relay(const std::shared_ptr<Call>& call) {
  RequestRecord rec;
  rec.tenant = tenants_.tenant(call->plan.tenant).name;
  rec.queued_s = seconds_between(call->plan.arrival, call->admitted);
  const std::vector<int32_t>& prompt = call->plan.request.prompt;
  rec.prompt_tokens = static_cast<int64_t>(prompt.size());
  // The keys of the prompt's full blocks before its last token: what a prefill
  // worker sends and what affinity is judged by.
  const int bs = pool_->block_size();
  const kv::BlockKey ns = kv::namespace_digest(
      {call->plan.request.cache_scope, pool_->model_digest(), pool_->tokenizer_digest(), pool_->kv_format()});
  std::vector<kv::BlockKey> keys;
  const size_t n_full = (prompt.size() - 1) / static_cast<size_t>(bs);
  kv::PrefixCache::extend_keys(ns, std::span(prompt).first(n_full * static_cast<size_t>(bs)), bs, keys);

  std::optional<Placement> decode = pool_->place(WorkerRole::kDecode, keys);
  if (!decode) return end_early(call, server::unavailable("no decode worker is available", "no_worker"), true);
  counters_.affinity_blocks_decode += decode->affinity_blocks;
  // The tokens of full blocks the decode worker is not believed to hold: what
  // a prefill worker would compute and send.
  const auto n_uncached = static_cast<int64_t>(keys.size() - std::min(keys.size(), decode->affinity_blocks)) * bs;
  const WorkerPool::PrefillAvailability prefill = pool_->prefill_availability(keys);
  const auto n_remote =
      static_cast<int64_t>(keys.size() - std::min(keys.size(), prefill.most_held_blocks)) * bs;
  const PrefillDecision d = decide_prefill(keys.empty(), n_uncached, n_remote, prefill, *decode);
  RemotePrefill remote;
  if (d.where == PrefillWhere::kRemote) {
    std::optional<RemotePrefill> r = prefill_remotely(call, keys, decode, rec);
    if (!r) return;
    remote = *r;
  }
  const double worker_prompt_ms = relay_decode(call, *decode, remote.transfer_id, rec);
  if (n_uncached <= 0 || worker_prompt_ms < 0) return;
  std::lock_guard lock(policy_mu_);
  if (remote.round_trip_ms >= 0) {
    // The remote line is the cost of a prompt that starts at once (the
    // queue is priced apart): a prompt that waited behind others would
    // count its wait twice.
    if (prefill.least_in_flight == 0) policy_.observe_remote(n_remote, remote.round_trip_ms + worker_prompt_ms);
  } else {
    policy_.observe_local(n_uncached, worker_prompt_ms);
  }
}

PrefillDecision RelayBackend::decide_prefill(bool no_full_block, int64_t n_local, int64_t n_remote,
                                             const WorkerPool::PrefillAvailability& a, const Placement& decode) {
  std::lock_guard lock(policy_mu_);
  const double now_s = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  ArrivalRate& arrivals = decode_arrivals_[decode.index];
  arrivals.arrive(now_s);
  const DecodeWorkerLoad load{decode.prefill_chunk_tokens, arrivals.per_second(now_s)};
  PrefillDecision d{PrefillWhere::kLocal, "no_full_block"};  // nothing a prefill worker could send
  if (!no_full_block) {
    d = policy_.decide(n_local, n_remote, decode.others_in_flight, a.any, a.least_in_flight, load);
  }
  ++decisions_[{d.where == PrefillWhere::kRemote ? "remote" : "local", d.reason}];
  return d;
}

std::optional<RelayBackend::RemotePrefill> RelayBackend::prefill_remotely(const std::shared_ptr<Call>& call,
                                                                          const std::vector<kv::BlockKey>& keys,
                                                                          std::optional<Placement>& decode,
                                                                          RequestRecord& rec) {
  for (int attempt = 0; attempt < 3 && !call->gone && !cancelled_; ++attempt) {
    std::optional<Placement> prefill = pool_->place(WorkerRole::kPrefill, keys);
    if (!prefill) break;
    const std::string id = server::random_response_id("kv-");
    // Blocks the decode worker is believed to hold need not travel; if it
    // evicted them meanwhile, it computes them (slower, the same output).
    json body = {{"prompt", call->plan.request.prompt},
                 {"transfer_id", id},
                 {"decode_kv", decode->kv_address},
                 {"skip_blocks", decode->affinity_blocks}};
    if (auto ms = server::remaining_ms(call->plan.request.scheduling.deadline)) body["deadline_ms"] = *ms;
    net::HttpRequestSpec spec;
    spec.method = "POST";
    spec.path = "/internal/prefill";
    spec.api_key = call->api_key;
    spec.body = body.dump();
    spec.timeout_s = config_.worker_timeout_s;
    spec.stop = [this, call] { return call->gone.load() || cancelled_.load(); };
    const Clock::time_point sent = Clock::now();
    auto r = net::http_fetch(prefill->endpoint, spec);
    const double round_trip_ms = seconds_between(sent, Clock::now()) * 1000;
    pool_->release(*prefill);
    if (!r.is_ok()) {
      ++counters_.failures_prefill;
      pool_->mark_failed(*prefill, r.status().message());
      continue;  // another prefill worker, or the decode worker alone
    }
    auto doc = json::parse(r->body, nullptr, false);
    if (r->status == 200 && doc.is_object()) {
      counters_.affinity_blocks_prefill += prefill->affinity_blocks;
      pool_->record_blocks(*prefill, keys);
      if (doc.value("blocks", 0) == 0) return RemotePrefill{};
      pool_->record_blocks(*decode, keys);
      ++counters_.transfers;
      counters_.transfer_blocks += doc.value("blocks", uint64_t{0});
      counters_.transfer_bytes += doc.value("bytes", uint64_t{0});
      counters_.transfer_micros += static_cast<uint64_t>(doc.value("transfer_ms", 0.0) * 1000);
      counters_.prefill_micros += static_cast<uint64_t>(doc.value("prefill_ms", 0.0) * 1000);
      return RemotePrefill{id, round_trip_ms};
    }
    const json error = doc.is_object() && doc.contains("error") ? doc["error"] : json::object();
    if (r->status == 502 && error.value("code", "") == "kv_transfer_failed") {
      // The decode worker could not take the blocks: another one, if any.
      ++counters_.failures_decode;
      pool_->mark_failed(*decode, "KV transfer failed: " + error.value("message", ""));
      pool_->release(*decode);
      decode = pool_->place(WorkerRole::kDecode, keys);
      if (!decode) {
        end_early(call, server::unavailable("no decode worker is available", "no_worker"), true);
        return std::nullopt;
      }
      continue;
    }
    // The prefill worker's own verdict on this request (429, 400, ...) is the router's.
    pool_->release(*decode);
    HttpResponse out;
    out.status = r->status;
    out.body = r->body;
    if (r->status == 429) out.headers.emplace_back("Retry-After", "1");
    rec.http_status = r->status;
    rec.rejected_early = r->status == 429;
    if (!call->gone) call->ch->respond(std::move(out));
    finish_call(call, rec, rec.prompt_tokens);
    return std::nullopt;
  }
  ++counters_.prefill_fallbacks;
  return RemotePrefill{};
}

double RelayBackend::relay_decode(const std::shared_ptr<Call>& call, const Placement& decode,
                                  const std::string& transfer_id, RequestRecord& rec) {
  net::HttpRequestSpec spec;
  spec.method = "POST";
  const bool responses_api = call->plan.meta.kind == server::ApiKind::kResponses;
  spec.path = responses_api                                ? "/v1/responses"
              : call->plan.kind == server::ApiKind::kChat ? "/v1/chat/completions"
                                                          : "/v1/completions";
  spec.api_key = call->api_key;
  spec.body = call->body;
  if (!transfer_id.empty()) spec.headers.emplace_back("x-ladder-kv-transfer", transfer_id);
  if (auto ms = server::remaining_ms(call->plan.request.scheduling.deadline)) {
    spec.headers.emplace_back("x-ladder-deadline-ms", fmt::format("{:.3f}", *ms));
  }
  spec.timeout_s = config_.worker_timeout_s;
  spec.stop = [this, call] { return call->gone.load() || cancelled_.load(); };
  int status = 0;
  bool streaming = false;
  std::string content_type;
  // The whole body; of a stream its last bytes ([DONE], the final "ladder"
  // block), or all of a Responses API stream (its last event holds the
  // whole response, which the router keeps).
  std::string seen;
  size_t forwarded = 0;  // of a Responses API stream's `seen`, what the client has
  const Clock::time_point sent = Clock::now();
  const Status st = net::http_stream(
      decode.endpoint, spec,
      [&](int s, std::string_view ct) {
        status = s;
        content_type = std::string(ct);
        streaming = content_type.rfind("text/event-stream", 0) == 0;
        if (streaming && !call->gone) call->ch->start_stream(status, content_type, {});
      },
      [&](std::string_view bytes) {
        seen.append(bytes);
        if (!streaming) return;
        if (responses_api) {
          // Whole events only, and none from the terminal one on: it waits
          // until the router kept the response (below), since a client may
          // name it in its next request the moment it sees it.
          const size_t whole = seen.rfind("\n\n");
          if (whole == std::string::npos) return;
          const size_t upto = std::min(whole + 2, terminal_event_at(seen, forwarded));
          if (upto > forwarded && !call->gone) call->ch->send(seen.substr(forwarded, upto - forwarded));
          forwarded = std::max(forwarded, upto);
          return;
        }
        if (!call->gone) call->ch->send(std::string(bytes));
        constexpr size_t kTail = 64 * 1024;
        if (seen.size() > 2 * kTail) seen.erase(0, seen.size() - kTail);
      });
  pool_->release(decode);
  rec.e2e_s = seconds_between(call->plan.arrival, Clock::now());
  const bool complete = st.is_ok() && (streaming ? stream_complete(seen) : json::accept(seen));
  if (call->gone) {
    rec.http_status = 499;
    finish_call(call, rec, rec.prompt_tokens);
    return -1;
  }
  if (!complete) {
    ApiError e = server::unavailable("the server is shutting down", "server_draining");
    if (!cancelled_) {
      ++counters_.failures_decode;
      const std::string why = st.is_ok() ? "its response ended early" : st.message();
      pool_->mark_failed(decode, why);
      e = ApiError{502, "the decode worker failed while serving this request: " + why, "server_error", "",
                   "worker_lost", 0};
    }
    rec.http_status = e.http_status;
    if (streaming) {
      call->ch->send(std::string(responses_api ? "event: error\n" : "") + server::sse_data(json::parse(e.body())));
      if (!responses_api) call->ch->send(server::kSseDone);
      call->ch->finish();
    } else {
      call->ch->respond(server::error_response(e));
    }
    finish_call(call, rec, rec.prompt_tokens);
    return -1;
  }
  const json last = final_object(seen, streaming);
  if (responses_api && status == 200 && last.is_object() && call->plan.responses->on_response) {
    call->plan.responses->on_response(last);  // the router keeps it, for previous_response_id
  }
  if (streaming) {
    if (responses_api && forwarded < seen.size()) call->ch->send(seen.substr(forwarded));
    call->ch->finish();
  } else {
    HttpResponse out;
    out.status = status;
    out.content_type = content_type.empty() ? "application/json" : content_type;
    out.body = seen;
    if (status == 429) out.headers.emplace_back("Retry-After", "1");
    call->ch->respond(std::move(out));
  }
  rec.http_status = status;
  rec.rejected_early = status == 429;
  rec.finished = status == 200;
  // The decode worker's own account: tokens, and its TTFT counted from when
  // the router sent the request.
  const json ladder = last.is_object() ? last["ladder"] : json();
  double worker_prompt_ms = -1;
  if (ladder.is_object()) {
    rec.completion_tokens = ladder.value("completion_tokens", int64_t{0});
    rec.cached_tokens = ladder.value("cached_tokens", int64_t{0});
    const double worker_ttft_s = ladder.value("ttft_ms", -1.0) / 1000;
    if (worker_ttft_s >= 0) {
      rec.ttft_s = seconds_between(call->plan.arrival, sent) + worker_ttft_s;
      worker_prompt_ms = std::max(0.0, worker_ttft_s * 1000 - ladder.value("queued_ms", 0.0));
    }
    const int64_t per_choice = rec.completion_tokens / std::max<int32_t>(1, call->plan.n);
    if (per_choice > 1) rec.tpot_s = ladder.value("decode_ms", 0.0) / 1000 / static_cast<double>(per_choice - 1);
  }
  finish_call(call, rec, rec.prompt_tokens + rec.completion_tokens);
  return status == 200 ? worker_prompt_ms : -1;
}

// ---------------------------------------------------------------- embeddings

HttpResponse RelayBackend::embed(const server::EmbeddingsRequest&, const server::HttpRequest& http,
                                 RequestRecord* record) {
  std::optional<Placement> decode = pool_->place(WorkerRole::kDecode, {});
  if (!decode) return server::error_response(server::unavailable("no decode worker is available", "no_worker"));
  net::HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = "/v1/embeddings";
  spec.api_key = server::bearer_key(http);
  spec.body = http.body;
  spec.timeout_s = config_.worker_timeout_s;
  auto r = net::http_fetch(decode->endpoint, spec);
  pool_->release(*decode);
  if (!r.is_ok()) {
    ++counters_.failures_decode;
    pool_->mark_failed(*decode, r.status().message());
    return server::error_response(ApiError{502, "the decode worker failed while serving this request: " +
                                                    r.status().message(),
                                           "server_error", "", "worker_lost", 0});
  }
  const json doc = json::parse(r->body, nullptr, false);
  if (doc.is_object() && doc.contains("usage")) record->prompt_tokens = doc["usage"].value("prompt_tokens", 0);
  HttpResponse out;
  out.status = r->status;
  out.body = r->body;
  return out;
}

// ------------------------------------------------------------------- pages

void RelayBackend::describe_health(server::ServerState, json& doc) const {
  json workers = json::array();
  for (const WorkerInfo& w : pool_->snapshot()) {
    workers.push_back({{"url", w.url},
                       {"role", worker_role_name(w.role)},
                       {"healthy", w.healthy},
                       {"status", w.status},
                       {"in_flight", w.in_flight},
                       {"kv_blocks_used", w.kv_blocks_used}});
  }
  doc["workers"] = std::move(workers);
}

json RelayBackend::model_facts() const {
  return {{"model_digest", pool_->model_digest()},
          {"tokenizer_digest", pool_->tokenizer_digest()},
          {"kv_format", pool_->kv_format()},
          {"kv_block_size", pool_->block_size()},
          {"version", version()},
          {"revision", git_revision()},
          {"kernels", pool_->kernels().value_or("")},
          {"config",
           {{"role", "router"},
            {"prefill_policy", prefill_mode_name(config_.prefill_mode)},
            {"prefill_workers", config_.prefill_urls},
            {"decode_workers", config_.decode_urls},
            {"max_queue", config_.max_queue},
            {"tenants", tenants_.size()}}}};
}

void RelayBackend::fill_gauges(server::GaugeSnapshot& g) const {
  g.holds_kv = false;  // the workers hold it; their /metrics say
  std::lock_guard lock(mu_);
  g.admission_queue = static_cast<int64_t>(waiting_.size());
  g.running = relaying_;
}

std::string RelayBackend::extra_metrics() const {
  std::string out;
  out +=
      "# HELP ladder_router_workers Workers behind the router by role and health.\n"
      "# TYPE ladder_router_workers gauge\n";
  std::map<std::pair<std::string, bool>, int> n;
  for (const char* role : {"prefill", "decode"}) {
    n[{role, true}] = 0;
    n[{role, false}] = 0;
  }
  for (const WorkerInfo& w : pool_->snapshot()) ++n[{worker_role_name(w.role), w.healthy}];
  for (const auto& [k, v] : n) {
    out += fmt::format("ladder_router_workers{{role=\"{}\",state=\"{}\"}} {}\n", k.first,
                       k.second ? "healthy" : "unhealthy", v);
  }
  auto counter = [&](const char* name, const char* help, const std::string& labels, double v) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0}{2} {3}\n", name, help, labels, v);
  };
  counter("ladder_router_transfers_total", "Requests whose prompt KV went from a prefill to a decode worker.",
          "", static_cast<double>(counters_.transfers.load()));
  counter("ladder_router_transfer_blocks_total", "KV blocks transferred for routed requests.", "",
          static_cast<double>(counters_.transfer_blocks.load()));
  counter("ladder_router_transfer_bytes_total", "KV transfer wire bytes for routed requests.", "",
          static_cast<double>(counters_.transfer_bytes.load()));
  counter("ladder_router_transfer_seconds_total", "Time spent sending KV (connect to acknowledgement).", "",
          static_cast<double>(counters_.transfer_micros.load()) / 1e6);
  counter("ladder_router_prefill_seconds_total", "Time prefill workers took to compute routed prompts.", "",
          static_cast<double>(counters_.prefill_micros.load()) / 1e6);
  counter(
      "ladder_router_prefill_fallbacks_total",
      "Requests with blocks to send whose prompt the decode worker computed (no prefill worker answered).",
      "", static_cast<double>(counters_.prefill_fallbacks.load()));
  out +=
      "# HELP ladder_router_prefill_decisions_total Where routed prompts were computed (remote: a prefill worker; "
      "local: the decode worker) and why.\n"
      "# TYPE ladder_router_prefill_decisions_total counter\n";
  std::optional<double> threshold;
  {
    std::lock_guard lock(policy_mu_);
    for (const auto& [key, count] : decisions_) {
      out += fmt::format("ladder_router_prefill_decisions_total{{where=\"{}\",reason=\"{}\"}} {}\n", key.first,
                         key.second, count);
    }
    threshold = policy_.threshold_tokens();
  }
  out += fmt::format(
      "# HELP ladder_router_prefill_threshold_tokens Uncached prompt tokens from which a prefill worker pays, as "
      "measured (with an idle decode worker; -1: not measured yet, or never).\n"
      "# TYPE ladder_router_prefill_threshold_tokens gauge\nladder_router_prefill_threshold_tokens {}\n",
      threshold ? *threshold : -1.0);
  out += fmt::format(
      "# HELP ladder_router_tpot_objective_ms The TPOT objective the prefill policy keeps decoding "
      "steps under (--tpot-ms, else the tightest tenant tpot_ms; 0: none).\n"
      "# TYPE ladder_router_tpot_objective_ms gauge\nladder_router_tpot_objective_ms {}\n",
      tpot_objective_ms_);
  out +=
      "# HELP ladder_router_affinity_blocks_total Leading prompt blocks the chosen worker was believed to "
      "hold.\n"
      "# TYPE ladder_router_affinity_blocks_total counter\n";
  out += fmt::format("ladder_router_affinity_blocks_total{{role=\"prefill\"}} {}\n",
                     counters_.affinity_blocks_prefill.load());
  out += fmt::format("ladder_router_affinity_blocks_total{{role=\"decode\"}} {}\n",
                     counters_.affinity_blocks_decode.load());
  out +=
      "# HELP ladder_router_worker_failures_total Worker calls that failed, by role.\n"
      "# TYPE ladder_router_worker_failures_total counter\n";
  out += fmt::format("ladder_router_worker_failures_total{{role=\"prefill\"}} {}\n",
                     counters_.failures_prefill.load());
  out += fmt::format("ladder_router_worker_failures_total{{role=\"decode\"}} {}\n",
                     counters_.failures_decode.load());
  return out;
}

}  // namespace ladder::route
