#include "server/local_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>

#include "common/build_info.h"
#include "common/sha256.h"
#include "engine/model_draft.h"
#include "kv/kv_format.h"
#include "model/model_bundle.h"
#include "ops/kernel_choice.h"
#include "server/api_error.h"
#include "server/embedder.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prompt_scorer.h"
#include "server/stream_pump.h"
#include "tokenizer/chat_template.h"

namespace ladder::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// What a loaded model brings; immutable once built.
struct Served {
  model::ModelBundle bundle;
  tokenizer::ChatTemplate chat_template;
  std::unique_ptr<StreamPump> pump;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<Planner> planner;
  std::unique_ptr<Embedder> embedder;
  std::unique_ptr<PromptScorer> scorer;
  // Engines a shadow rollback switched to (under LocalBackend::mu_); every
  // engine lives as long as the server, since exchanges keep theirs.
  std::vector<std::unique_ptr<engine::Engine>> fallback_engines;
  std::unique_ptr<ShadowVerifier> shadow;
};

const char* serve_role_name(ServeRole role) {
  switch (role) {
    case ServeRole::kBoth: return "both";
    case ServeRole::kPrefill: return "prefill";
    case ServeRole::kDecode: return "decode";
  }
  return "unknown";
}

LocalBackend::LocalBackend(const ServeConfig& config, const TenantRegistry& tenants)
    : config_(config), tenants_(tenants) {}

LocalBackend::~LocalBackend() {
  // Requests waiting to be scored start (and are refused by a stopped
  // engine, or cancelled below) before anything they refer to goes.
  scoring_->stop();
  // Exchanges left unsettled (a stop without a drain) go first: they refer
  // to the engine and the pump.
  {
    std::lock_guard lock(mu_);
    exchanges_.clear();
  }
  if (kv_senders_) kv_senders_->stop();
  if (kv_receiver_) kv_receiver_->stop();
  stop_engines();
}

void LocalBackend::stop_engines() {
  if (!served_) return;
  if (served_->shadow) served_->shadow->stop();
  served_->pump->stop();
  if (served_->engine) served_->engine->shutdown();
  std::lock_guard lock(mu_);
  for (auto& e : served_->fallback_engines) e->shutdown();
}

uint16_t LocalBackend::kv_port() const { return kv_receiver_ ? kv_receiver_->port() : 0; }

const RequestBuilder* LocalBackend::builder() const {
  Served* s = ready_.load();
  return s != nullptr ? &s->planner->builder() : nullptr;
}

Status LocalBackend::load() {
  const auto t0 = Clock::now();
  LADDER_ASSIGN_OR_RETURN(model::ModelBundle bundle, model::ModelBundle::load(config_.model_path,
                                                                             config_.engine.scheduler.context_length));
  LADDER_ASSIGN_OR_RETURN(tokenizer::ChatTemplate tmpl,
                          tokenizer::chat_template_for(*bundle.file, config_.chat_template));
  served_ = std::unique_ptr<Served>(new Served{std::move(bundle), std::move(tmpl)});
  Served& s = *served_;
  s.pump = std::make_unique<StreamPump>();
  LADDER_ASSIGN_OR_RETURN(s.engine, make_engine(config_.engine, config_.draft));
  services_.engine = s.engine.get();
  const engine::EngineConfig& ec = s.engine->config();
  {
    // Stable across restarts of one configuration: the decode worker's KV
    // port (chosen at start) is left out.
    json settings = effective_config();
    settings.erase("kv_port");
    // The kernels' arithmetic too: replicas on CPUs whose kernels sum in
    // another order produce other bits.
    system_fingerprint_ = "fp_" + sha256_hex(json{{"model_digest", ec.model_digest},
                                                  {"tokenizer_digest", ec.tokenizer_digest},
                                                  {"revision", git_revision()},
                                                  {"kernels", ops::kernel_fingerprint()},
                                                  {"config", settings}}
                                                 .dump())
                                      .substr(0, 16);
  }
  PlannerOptions po;
  po.served_model_name = config_.served_model_name;
  po.model_path = config_.model_path;
  po.system_fingerprint = system_fingerprint_;
  po.max_input_tokens = s.engine->max_input_tokens();
  po.tool_preamble = config_.tool_preamble;
  po.reasoning_parser = config_.reasoning_parser;
  s.planner = std::make_unique<Planner>(*s.bundle.tokenizer, s.chat_template, po);
  s.embedder = std::make_unique<Embedder>(*s.bundle.model, *s.bundle.tokenizer, s.engine->max_input_tokens());
  s.scorer = std::make_unique<PromptScorer>(*s.bundle.model);

  services_.pump = s.pump.get();
  services_.tokenizer = s.bundle.tokenizer.get();
  services_.tenants = &tenants_;
  services_.on_settled = [this](const Exchange* x, RequestRecord rec) {
    std::shared_ptr<Exchange> done;  // released outside the lock
    SettledFn settled;
    {
      std::lock_guard lock(mu_);
      auto it = exchanges_.find(x);
      if (it == exchanges_.end()) return;
      done = std::move(it->second.first);
      settled = std::move(it->second.second);
      exchanges_.erase(it);
    }
    settled(std::move(rec));
  };
  LADDER_RETURN_IF_ERROR(start_role());
  LADDER_RETURN_IF_ERROR(start_shadow());
  const engine::Engine& e = *s.engine;
  if (const model::ModelConfig& mc = s.bundle.model->config(); mc.rope_factors.rfind("rope_factors_", 0) == 0) {
    spdlog::info("LongRoPE: {} (served context {}, original {}), attention factor {:.4f}", mc.rope_factors,
                 e.context_length(), mc.rope_original_context > 0 ? mc.rope_original_context : mc.context_length,
                 mc.rope_attn_factor);
  }
  spdlog::info("model {} loaded in {:.0f} ms: context {}, {} KV blocks ({}), {} running slots, queue {}",
               config_.served_model_name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
               e.context_length(), e.n_kv_blocks(), e.kv_format_name(), e.config().scheduler.max_running,
               e.config().max_queue);
  ready_ = served_.get();
  return Status::ok();
}

// The rung-2 pieces of a prefill or decode worker, once its engine exists.
Status LocalBackend::start_role() {
  const engine::Engine& e = *served_->engine;
  if (config_.role == ServeRole::kDecode) {
    KvReceiverConfig rc;
    rc.host = config_.kv_host;
    rc.port = config_.kv_port;
    rc.model_digest = e.config().model_digest;
    rc.tokenizer_digest = e.config().tokenizer_digest;
    rc.shape = e.kv_wire_shape();
    kv_inbox_ = std::make_unique<KvInbox>(config_.kv_inbox_bytes, config_.kv_inbox_ttl, kv_metrics_);
    kv_receiver_ = std::make_unique<KvReceiver>(rc, *kv_inbox_, kv_metrics_);
    LADDER_RETURN_IF_ERROR(kv_receiver_->start());
    spdlog::info("decode role: KV transfers accepted on {}:{}", rc.host, kv_receiver_->port());
  } else if (config_.role == ServeRole::kPrefill) {
    kv_senders_ = std::make_unique<WorkQueue>(config_.kv_send_threads, config_.max_pending_prepare);
    prefill_.engine = served_->engine.get();
    prefill_.pump = served_->pump.get();
    prefill_.tenants = &tenants_;
    prefill_.metrics = &kv_metrics_;
    prefill_.senders = kv_senders_.get();
    spdlog::info("prefill role: POST /internal/prefill computes prompts and sends their KV to decode workers");
  }
  return Status::ok();
}

Result<std::unique_ptr<engine::Engine>> LocalBackend::make_engine(engine::EngineConfig ec,
                                                                  const engine::DraftSpec& draft) const {
  const Served& s = *served_;
  ec.model_digest = s.bundle.file->digest();
  ec.tokenizer_digest = s.bundle.tokenizer->digest();
  ec.tokenizer = s.bundle.tokenizer.get();
  ec.tenants = tenant_budgets(tenants_);
  ec.on_step = [pump = s.pump.get()](const engine::StepReport&) { pump->wake(); };
  if (draft.kind != engine::DraftSpec::Kind::kNone) {
    LADDER_ASSIGN_OR_RETURN(ec.speculative.draft, engine::make_draft(draft, *s.bundle.model, *s.bundle.file,
                                                                     engine::draft_options_for(ec)));
  }
  return engine::Engine::create(*s.bundle.model, ec);
}

// Shadow verification: a rung-1 reference beside the live engine.
Status LocalBackend::start_shadow() {
  if (config_.shadow.rate <= 0) return Status::ok();
  if (config_.role != ServeRole::kBoth) {
    return invalid_argument("--shadow-rate needs --role both: a rung-2 worker serves part of a request");
  }
  Served& s = *served_;
  ShadowConfig sc = config_.shadow;
  engine::EngineConfig& ref = sc.reference;
  ref.model_digest = s.bundle.file->digest();
  ref.tokenizer_digest = s.bundle.tokenizer->digest();
  ref.tokenizer = s.bundle.tokenizer.get();
  // One sequence of the whole context at a time.
  const engine::Engine& e = *s.engine;
  ref.scheduler.context_length = e.context_length();
  ref.max_input_tokens = e.max_input_tokens();
  ref.max_output_tokens = e.max_output_tokens();
  ref.scheduler.max_running = 1;
  ref.n_kv_blocks = static_cast<int32_t>((e.context_length() + ref.block_size - 1) / ref.block_size) + 2;
  int threads = e.config().n_threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  LADDER_ASSIGN_OR_RETURN(s.shadow, ShadowVerifier::create(*s.bundle.model, std::move(sc), threads,
                                                           [this](const ShadowFallback& to) { return switch_to(to); }));
  services_.on_shadow = [this](const GenerationPlan& plan, std::vector<int32_t> tokens, engine::FinishReason finish) {
    ShadowCase c;
    c.request = plan.request;
    c.request.constraint = nullptr;
    c.grammar = plan.grammar;
    c.live_tokens = std::move(tokens);
    c.live_finish = finish;
    c.slice = slice_of(plan);
    c.request_id = plan.meta.id;
    c.generation = plan.shadow_generation;
    served_->shadow->offer(std::move(c));
  };
  spdlog::info("shadow verification: {:.0f}% of finished requests re-run on a rung-1 reference (KV {}, {:.2f} "
               "cores at most); serving rung {} '{}'",
               100 * config_.shadow.rate, tensor_type_name(config_.shadow.reference.kv_dtype),
               std::min(1.0, config_.shadow.budget * threads), config_.shadow.rung, config_.shadow.name);
  return Status::ok();
}

Status LocalBackend::switch_to(const ShadowFallback& to) {
  LADDER_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> next, make_engine(to.engine, to.draft));
  engine::Engine* raw = next.get();
  {
    std::lock_guard lock(mu_);
    served_->fallback_engines.push_back(std::move(next));
  }
  services_.engine = raw;  // new exchanges; running ones finish where they are
  spdlog::warn("serving rung {} '{}' for new requests: {} KV blocks ({})", to.rung, to.name, raw->n_kv_blocks(),
               raw->kv_format_name());
  return Status::ok();
}

std::string LocalBackend::slice_of(const GenerationPlan& plan) const {
  if (!plan.slice.empty()) return plan.slice;
  if (static_cast<int64_t>(plan.request.prompt.size()) * 2 >= live().context_length()) return "long_context";
  return plan.kind == ApiKind::kChat ? "chat" : "completion";
}

// ---------------------------------------------------------------- requests

void LocalBackend::serve(GenerationPlan plan, const HttpRequest& http, std::shared_ptr<ResponseChannel> channel,
                         SettledFn settled) {
  if (ShadowVerifier* shadow = ready_.load()->shadow.get();
      shadow != nullptr && plan.n == 1 && plan.prompts.size() <= 1 && tenants_.tenant(plan.tenant).shadow) {
    if (std::optional<uint64_t> seed = shadow->sample()) {
      // The reference must sample what this request samples: an explicit seed.
      plan.shadow = true;
      plan.shadow_generation = shadow->generation();
      if (!plan.request.sampling.seed) plan.request.sampling.seed = *seed;
    }
  }
  if (kv_inbox_ != nullptr) {
    // A decode worker: the router names the transfer that carries this prompt's KV.
    const std::string transfer = http.header("x-ladder-kv-transfer");
    if (!transfer.empty()) {
      plan.request.kv_import = kv_inbox_->take(transfer);
      if (plan.request.kv_import == nullptr) {
        spdlog::warn("KV transfer {} is not here (expired or never sent): computing the prompt", transfer);
      }
    }
  }
  if (plan.prompt_logprobs) {
    // The prompts' own logprobs: a pass of the model per prompt, on the
    // scoring thread (bounded queue), so that planning goes on meanwhile.
    const int tenant = plan.tenant;
    auto task = [this, plan = std::move(plan), channel, settled]() mutable {
      if (Status st = score_prompts(plan); !st.is_ok()) {
        refuse(api_error_from_status(st, "prompt_logprobs"), plan.tenant, *channel, settled);
        return;
      }
      start_exchange(std::move(plan), std::move(channel), std::move(settled));
    };
    if (!scoring_->post(std::move(task))) {
      refuse(unavailable("too many requests for prompt logprobs are waiting; retry shortly", "server_overloaded"),
             tenant, *channel, settled);
    }
    return;
  }
  start_exchange(std::move(plan), std::move(channel), std::move(settled));
}

void LocalBackend::refuse(const ApiError& error, int tenant, ResponseChannel& channel, const SettledFn& settled) {
  channel.respond(error_response(error));
  RequestRecord rec;
  rec.tenant = tenants_.tenant(tenant).name;
  rec.http_status = error.http_status;
  rec.rejected_early = error.http_status == 429;
  settled(rec);
}

Status LocalBackend::score_prompts(GenerationPlan& plan) {
  // A prompt over the input bound is left to the engine's refusal.
  const Served& s = *ready_.load();
  const std::vector<std::vector<int32_t>> one{plan.request.prompt};
  for (const std::vector<int32_t>& prompt : plan.prompts.empty() ? one : plan.prompts) {
    if (static_cast<int64_t>(prompt.size()) > live().max_input_tokens()) {
      plan.prompt_scores.clear();
      return Status::ok();
    }
    LADDER_ASSIGN_OR_RETURN(std::vector<PromptTokenScore> scores, s.scorer->score(prompt, *plan.prompt_logprobs));
    plan.prompt_scores.push_back(std::make_shared<const std::vector<PromptTokenScore>>(std::move(scores)));
  }
  return Status::ok();
}

void LocalBackend::start_exchange(GenerationPlan plan, std::shared_ptr<ResponseChannel> channel, SettledFn settled) {
  auto x = std::make_shared<Exchange>(std::move(plan), std::move(channel), services_);
  {
    std::lock_guard lock(mu_);
    exchanges_.emplace(x.get(), std::make_pair(x, std::move(settled)));
  }
  x->start();
}

HttpResponse LocalBackend::embed(const EmbeddingsRequest& request, const HttpRequest&, RequestRecord* record) {
  int64_t n_tokens = 0;
  Result<json> body = ready_.load()->embedder->respond(request, config_.served_model_name, &n_tokens);
  record->prompt_tokens = n_tokens;
  if (!body.is_ok()) return error_response(api_error_from_status(body.status()));
  HttpResponse r;
  r.body = dump_json(*body);
  return r;
}

bool LocalBackend::owns_route(const std::string& path) const {
  return config_.role == ServeRole::kPrefill && path == "/internal/prefill";
}

void LocalBackend::serve_route(const HttpRequest& http, std::shared_ptr<ResponseChannel> channel,
                               std::function<void()> done) {
  handle_prefill(prefill_, http, bearer_key(http), std::move(channel), std::move(done));
}

void LocalBackend::cancel_all() {
  Served* s = ready_.load();
  if (s == nullptr) return;
  s->engine->cancel_all();
  std::lock_guard lock(mu_);
  for (auto& e : s->fallback_engines) e->cancel_all();
}

std::string LocalBackend::stop() {
  scoring_->stop();  // what waits to be scored starts its exchange first
  std::vector<std::shared_ptr<Exchange>> unsettled;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, x] : exchanges_) unsettled.push_back(x.first);
  }
  for (auto& x : unsettled) x->abandon();
  unsettled.clear();
  if (kv_senders_) kv_senders_->stop();
  if (kv_receiver_) kv_receiver_->stop();
  if (!served_ || !served_->engine) return "";
  stop_engines();
  const engine::EngineMetrics m = live().metrics();
  return fmt::format("; KV blocks in use {} of {}, running {}, queued {}", m.kv_blocks_used, m.kv_blocks_total,
                     m.running, m.queue_depth + m.admission_queued);
}

// ------------------------------------------------------------------- pages

void LocalBackend::describe_health(ServerState state, json& doc) const {
  Served* s = ready_.load();
  if (s == nullptr || state != ServerState::kReady) return;
  const engine::EngineMetrics m = live().metrics();
  doc["running"] = m.running;
  doc["kv_blocks_used"] = m.kv_blocks_used;
  doc["kv_blocks_free"] = m.kv_blocks_free;
  if (config_.role != ServeRole::kBoth) {
    // What `ladder route` checks and places by: the same model everywhere,
    // the keys' namespace, capacity, where KV goes.
    const engine::EngineConfig& ec = live().config();
    doc["model_digest"] = ec.model_digest;
    doc["tokenizer_digest"] = ec.tokenizer_digest;
    doc["kv_format"] = live().kv_format_name();
    doc["kv_block_size"] = ec.block_size;
    doc["max_running"] = ec.scheduler.max_running;
    // The most prompt tokens one sequence computes per step (the router's
    // TPOT guard prices a local prefill's step by it).
    doc["prefill_chunk_tokens"] = ec.scheduler.max_chunk_tokens > 0
                                      ? std::min(ec.scheduler.max_chunk_tokens, ec.scheduler.max_batch_tokens)
                                      : ec.scheduler.max_batch_tokens;
    doc["max_input_tokens"] = live().max_input_tokens();
    doc["context_length"] = live().context_length();
    doc["tool_preamble"] = config_.tool_preamble;
    doc["chat_template_digest"] = sha256_hex(s->chat_template.source());
    // The order the kernels sum in: outputs of a split match one worker's
    // only where every worker's is the same.
    doc["kernels"] = ops::kernel_fingerprint();
    doc["kv_port"] = kv_port();
  }
}

int64_t LocalBackend::context_length() const { return live().context_length(); }

json LocalBackend::effective_config() const {
  const engine::Engine& e = live();
  const engine::EngineConfig& ec = e.config();
  const engine::SpeculativeConfig& sc = ec.speculative;
  const kv::EvictionPolicy& ev = ec.kv_eviction;
  return {{"role", serve_role_name(config_.role)},
          {"kv_port", kv_port()},
          {"speculative",
           {{"draft", sc.draft ? sc.draft->name() : "off"},
            {"k", sc.draft ? sc.k : 0},
            {"adaptive", sc.draft != nullptr && sc.adaptive}}},
          {"kv_dtype", std::string(tensor_type_name(ec.kv_dtype))},
          {"kv_format", e.kv_format_name()},
          {"kv_approximate", kv::kv_format_is_approximate(ec.kv_dtype) || ev.enabled()},
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
          {"tool_preamble", config_.tool_preamble},
          {"chat_template_digest", sha256_hex(served_->chat_template.source())},
          {"reasoning_parser", config_.reasoning_parser},
          {"threads", ec.n_threads},
          {"tenants", tenants_.size()}};
}

json LocalBackend::model_facts() const {
  // What a measurement of this server must name to be reproducible: the
  // exact weights and tokenizer, every setting that can change output or
  // latency, and the engine's revision.
  const Served& s = *ready_.load();
  const engine::EngineConfig& ec = live().config();
  json facts = {{"architecture", s.bundle.model->config().arch},
                {"model_digest", ec.model_digest},
                {"tokenizer_digest", ec.tokenizer_digest},
                {"kv_dtype", std::string(tensor_type_name(ec.kv_dtype))},
                {"kv_evict", std::string(kv::eviction_kind_name(ec.kv_eviction.kind))},
                {"kv_host_bytes", ec.kv_host_bytes},
                {"kv_block_size", ec.block_size},
                {"kv_blocks", live().n_kv_blocks()},
                {"embedding_width", s.embedder->width()},
                {"version", version()},
                {"revision", git_revision()},
                {"kernels", ops::kernel_fingerprint()},
                {"system_fingerprint", system_fingerprint_},
                {"config", effective_config()}};
  if (s.shadow) facts["shadow"] = s.shadow->describe();
  return facts;
}

void LocalBackend::fill_gauges(GaugeSnapshot& g) const {
  const Served* loaded = ready_.load();
  if (loaded == nullptr) return;
  const engine::EngineMetrics m = live().metrics();
  g.admission_queue = m.admission_queued;
  g.engine_waiting = m.queue_depth;
  g.running = m.running;
  g.kv_blocks_used = m.kv_blocks_used;
  g.kv_blocks_free = m.kv_blocks_free;
  g.prefix_hit_tokens = m.prefix_hit_tokens;
  g.kv_host = m.kv_host;
  g.speculative = live().config().speculative.draft != nullptr;
  g.spec = m.spec;
}

std::string LocalBackend::extra_metrics() const {
  const Served* s = ready_.load();
  if (config_.role == ServeRole::kBoth) return s != nullptr && s->shadow ? s->shadow->render_metrics() : "";
  const engine::EngineMetrics m = s != nullptr ? live().metrics() : engine::EngineMetrics{};
  return kv_metrics_.render(m.kv_imported_blocks, m.kv_refused_blocks);
}

}  // namespace ladder::server
