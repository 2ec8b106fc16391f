#include "engine/engine.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include "common/check.h"
#include "common/cpu_time.h"
#include "engine/output_text.h"
#include "engine/sampler.h"
#include "ops/kv_codec.h"

namespace ladder::engine {

// A request the loop is serving: what the scheduler does not keep.
struct Engine::Active {
  std::shared_ptr<TokenStream> stream;
  Sampler sampler;
  RequestTimings timings;
  Usage usage;
  int32_t n_preemptions = 0;
  std::optional<OutputText> text;  // when the engine has a tokenizer
  std::shared_ptr<TokenConstraint> constraint;
  SpecState spec;
  bool export_kv = false;
  kv::BlockKey ns;  // the request's cache namespace digest
};

namespace {

std::vector<TenantBudget> tenants_or_default(const std::vector<TenantBudget>& tenants) {
  if (!tenants.empty()) return tenants;
  return {TenantBudget{}};
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const model::LlamaModel& model, const EngineConfig& config,
                                               std::unique_ptr<kv::KvStorage> storage) {
  const model::ModelConfig& mc = model.config();
  if (config.block_size < 1 || config.block_size > 1024) {
    return invalid_argument(fmt::format("KV block size must be in [1, 1024], got {}", config.block_size));
  }
  if (config.scheduler.max_batch_tokens < 1 || config.scheduler.max_running < 1) {
    return invalid_argument("the step token budget and max running sequences must be positive");
  }
  if (mc.context_length < 2) return invalid_argument("the model's context length is below 2");
  if (config.max_queue < 0) return invalid_argument("the admission queue bound must be >= 0");
  if (!(config.max_busy_fraction > 0 && config.max_busy_fraction <= 1)) {
    return invalid_argument(fmt::format("the engine's busy fraction must be in (0, 1], got {}",
                                        config.max_busy_fraction));
  }
  double shares = 0;
  for (const TenantBudget& t : config.tenants) {
    if (!(t.reserved_share >= 0 && t.reserved_share <= 1)) {
      return invalid_argument("a tenant's reserved share must be in [0, 1]");
    }
    shares += t.reserved_share;
  }
  if (shares > 1 + 1e-9) {
    return invalid_argument(fmt::format("tenant reserved shares add up to {:.3f}, more than 1", shares));
  }
  if (config.speculative.draft != nullptr && (config.speculative.k < 1 || config.speculative.k > kMaxSpecK)) {
    return invalid_argument(fmt::format("speculative k must be in [1, {}], got {}", kMaxSpecK, config.speculative.k));
  }
  if (config.kv_eviction.enabled() && config.speculative.draft != nullptr) {
    return invalid_argument("KV eviction and speculative decoding cannot be combined yet");
  }
  std::unique_ptr<Engine> e(new Engine(model, config));
  if (config.speculative.draft != nullptr) e->spec_ = std::make_unique<Speculator>(config.speculative);

  if (storage == nullptr) {
    LADDER_ASSIGN_OR_RETURN(kv::KvShape shape,
                            plan_kv_shape(static_cast<int>(mc.n_layers), static_cast<int>(mc.n_kv_heads),
                                          static_cast<int>(mc.head_dim), config));
    LADDER_ASSIGN_OR_RETURN(storage, kv::make_arena_storage(shape));
  }
  const kv::KvShape& shape = storage->shape();
  if (shape.n_layers != mc.n_layers || shape.n_kv_heads != mc.n_kv_heads || shape.head_dim != mc.head_dim) {
    return invalid_argument(fmt::format("KV storage shape (layers {}, kv heads {}, head dim {}) does not match the "
                                        "model ({}, {}, {})",
                                        shape.n_layers, shape.n_kv_heads, shape.head_dim, mc.n_layers, mc.n_kv_heads,
                                        mc.head_dim));
  }
  e->config_.block_size = shape.block_size;
  e->config_.kv_dtype = shape.dtype;
  if (Status st = kv::check_eviction_policy(config.kv_eviction, shape.block_size); !st.is_ok()) return st;
  LADDER_RETURN_IF_ERROR(kv::check_host_tier(config.kv_host_bytes, shape, config.prefix_caching));
  e->kv_ = std::make_unique<kv::KvCacheManager>(std::move(storage), config.prefix_caching, config.kv_eviction,
                                                config.kv_host_bytes);

  SchedulerConfig sc = config.scheduler;
  if (sc.context_length <= 0 || sc.context_length > mc.context_length) sc.context_length = mc.context_length;
  sc.tenant_token_share.clear();
  for (const TenantBudget& t : config.tenants) sc.tenant_token_share.push_back(t.reserved_share);
  e->scheduler_ = std::make_unique<Scheduler>(sc, *e->kv_);
  const int64_t ctx = sc.context_length;
  e->max_input_ = config.max_input_tokens > 0 ? std::min(config.max_input_tokens, ctx - 1) : ctx - 1;
  e->max_output_ = config.max_output_tokens > 0 ? std::min(config.max_output_tokens, ctx) : ctx;

  AdmissionConfig ac;
  ac.capacity = sc.max_running;
  ac.max_queue = config.max_queue;
  ac.initial_service_ms = config.initial_service_ms;
  e->admission_ = std::make_unique<AdmissionController>(ac, tenants_or_default(config.tenants));
  e->threads_ = std::make_unique<ops::ThreadPool>(config.n_threads);
  e->publish_metrics();
  e->thread_ = std::thread([raw = e.get()] { raw->loop(); });
  return e;
}

Engine::Engine(const model::LlamaModel& model, const EngineConfig& config) : model_(model), config_(config) {}

Engine::~Engine() { shutdown(); }

void Engine::request_stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void Engine::shutdown() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

Result<Submission> Engine::submit(Request request) {
  LADDER_RETURN_IF_ERROR(validate(request));
  Pending p;
  p.stream = std::make_shared<TokenStream>();
  p.arrival = Clock::now();
  if (request.sampling.seed.has_value()) {
    p.seed = *request.sampling.seed;
  } else {
    std::random_device rd;
    p.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  Submission s;
  s.stream = p.stream;
  s.max_tokens = request.stop.max_tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return failed_precondition("the engine is shut down").with_reason("server_draining");
    AdmissionRequest ar;
    ar.tenant = request.scheduling.tenant;
    ar.cost_tokens = static_cast<int64_t>(request.prompt.size()) + request.stop.max_tokens;
    if (request.scheduling.deadline != Clock::time_point::max()) ar.deadline = request.scheduling.deadline;
    const AdmissionDecision d = admission_->offer(ar, p.arrival);
    if (d.outcome == AdmissionOutcome::kRejected) {
      return resource_exhausted(d.reason).with_reason(d.code).with_retry_after(d.retry_after_s);
    }
    p.id = d.ticket;
    p.request = std::move(request);
    s.id = p.id;
    s.queued = d.outcome == AdmissionOutcome::kQueued;
    s.estimated_wait_ms = d.estimated_wait_ms;
    ++in_flight_;
    if (s.queued) {
      queued_.emplace(p.id, std::move(p));
      published_.admission_queued = static_cast<int64_t>(queued_.size());
    } else {
      inbox_.push_back(std::move(p));
    }
  }
  cv_.notify_all();
  return s;
}

void Engine::end_unstarted(Pending& p, FinishReason reason, Status status) {
  StreamEvent e;
  e.kind = StreamEvent::Kind::kFinished;
  e.finish = reason;
  e.status = std::move(status);
  e.usage.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
  e.timings.arrival = p.arrival;
  e.timings.finished = Clock::now();
  p.stream->push(std::move(e));
}

void Engine::cancel(RequestId id) {
  std::optional<Pending> withdrawn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = queued_.find(id);
    if (it != queued_.end()) {
      admission_->withdraw(id);
      withdrawn.emplace(std::move(it->second));
      queued_.erase(it);
      --in_flight_;
      published_.admission_queued = static_cast<int64_t>(queued_.size());
    } else {
      cancels_.push_back(id);
    }
  }
  if (withdrawn) {
    end_unstarted(*withdrawn, FinishReason::kCancelled, Status::ok());
  } else {
    cv_.notify_all();
  }
}

void Engine::cancel_all() {
  std::vector<RequestId> queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, p] : queued_) queued.push_back(id);
    // Admitted and running requests are the loop's to cancel.
    cancel_all_ = true;
  }
  for (RequestId id : queued) cancel(id);
  cv_.notify_all();
}

int64_t Engine::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void Engine::publish_metrics() {
  EngineMetrics m = counters_;
  const kv::KvCacheStats kv = kv_->stats();
  m.running = static_cast<int64_t>(scheduler_->n_running());
  m.kv_blocks_total = kv.blocks_total;
  m.kv_blocks_used = kv.blocks_used;
  m.kv_blocks_free = kv.blocks_free;
  m.kv_blocks_cached = kv.blocks_cached;
  m.prefix_hit_tokens = scheduler_->prefix_hit_tokens();
  m.kv_imported_blocks = kv.imported_blocks;
  m.kv_refused_blocks = kv.refused_blocks;
  m.kv_evicted_blocks = kv.evicted_blocks;
  m.kv_host = {.offloaded_blocks = kv.host_offloaded_blocks,
               .prefetched_blocks = kv.host_prefetched_blocks,
               .prefetched_late_blocks = kv.host_prefetched_late_blocks,
               .recomputed_blocks = kv.host_recomputed_blocks,
               .dropped_blocks = kv.host_dropped_blocks,
               .blocks = kv.host_blocks,
               .bytes_used = kv.host_bytes_used,
               .bytes_capacity = kv.host_bytes_capacity};
  m.preemptions = scheduler_->n_preemptions();
  if (spec_) spec_->publish(m);
  std::lock_guard<std::mutex> lock(mu_);
  m.queue_depth = static_cast<int64_t>(scheduler_->n_waiting() + inbox_.size());
  m.admission_queued = static_cast<int64_t>(queued_.size());
  published_ = m;
}

void Engine::loop() {
#ifdef __linux__
  if (config_.background && setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19) != 0) {
    spdlog::warn("engine: could not lower the background loop thread's priority");
  }
#endif
  while (true) {
    std::vector<Pending> pending;
    std::vector<RequestId> cancels;
    std::vector<Pending> expired;
    bool stop = false;
    bool cancel_everything = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] {
        return stopping_ || cancel_all_ || !inbox_.empty() || !cancels_.empty() || scheduler_->has_work();
      };
      if (auto next = admission_->next_deadline()) {
        cv_.wait_until(lock, *next, ready);
      } else {
        cv_.wait(lock, ready);
      }
      stop = stopping_;
      pending.swap(inbox_);
      cancels.swap(cancels_);
      cancel_everything = std::exchange(cancel_all_, false);
      for (uint64_t id : admission_->expire(Clock::now())) {
        auto it = queued_.find(id);
        LADDER_CHECK(it != queued_.end(), "an expired ticket has no queued request");
        expired.push_back(std::move(it->second));
        queued_.erase(it);
        --in_flight_;
      }
    }
    if (!expired.empty()) publish_metrics();  // the queue shrank before anyone hears of it
    for (Pending& p : expired) {
      end_unstarted(p, FinishReason::kError,
                    resource_exhausted("the deadline passed while the request waited in the queue")
                        .with_reason("deadline_exceeded")
                        .with_retry_after(1));
    }
    admit(pending);
    if (stop) break;
    if (cancel_everything) {
      for (const auto& [id, a] : active_) cancels.push_back(id);
    }
    apply_cancels(cancels);
    if (scheduler_->has_work()) {
      step();
      if (kv_->has_host_tier() && kv_->host_tier()->n_blocks() > 0) prefetch_upcoming();
      const int64_t cpu_us = thread_cpu_us();
      const int64_t used_us = cpu_us - counters_.loop_cpu_us;
      counters_.loop_cpu_us = cpu_us;
      std::this_thread::sleep_for(rest_for_busy_fraction(used_us, config_.max_busy_fraction));
    } else {
      publish_metrics();
    }
  }
  // Whatever is still in flight ends with an error event.
  std::vector<RequestId> left;
  for (const auto& [id, a] : active_) left.push_back(id);
  for (RequestId id : left) {
    scheduler_->cancel(id);
    finish(id, FinishReason::kError, failed_precondition("the engine shut down").with_reason("server_draining"));
  }
  std::vector<Pending> queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, p] : queued_) {
      admission_->withdraw(id);
      queued.push_back(std::move(p));
    }
    queued_.clear();
    in_flight_ -= static_cast<int64_t>(queued.size());
  }
  for (Pending& p : queued) {
    end_unstarted(p, FinishReason::kError,
                  failed_precondition("the engine shut down").with_reason("server_draining"));
  }
  publish_metrics();
}

kv::BlockKey Engine::namespace_of(const Request& request) const {
  return kv::namespace_digest({request.cache_scope, config_.model_digest, config_.tokenizer_digest, kv_->format_name()});
}

void Engine::prefetch_upcoming() {
  // Under the lock: which requests come next, and the prompts of those not
  // seen before (copied); hashing and block copies run without it.
  std::vector<RequestId> next;
  std::vector<std::tuple<RequestId, kv::BlockKey, std::vector<int32_t>>> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<const Pending*> queued;
    for (const auto& [id, p] : queued_) queued.push_back(&p);
    std::sort(queued.begin(), queued.end(), [](const Pending* a, const Pending* b) {
      return a->arrival != b->arrival ? a->arrival < b->arrival : a->id < b->id;
    });
    const auto most = static_cast<size_t>(scheduler_->config().max_running);
    auto take = [&](const Pending& p) {
      if (next.size() >= most) return;
      next.push_back(p.id);
      if (upcoming_keys_.count(p.id) == 0) fresh.emplace_back(p.id, namespace_of(p.request), p.request.prompt);
    };
    for (const Pending& p : inbox_) take(p);
    for (const Pending* p : queued) take(*p);
  }
  std::unordered_map<RequestId, std::vector<kv::BlockKey>> keys;
  for (RequestId id : next) {
    if (auto it = upcoming_keys_.find(id); it != upcoming_keys_.end()) keys.emplace(id, std::move(it->second));
  }
  for (auto& [id, ns, prompt] : fresh) keys.emplace(id, kv_->prefetch_keys(ns, prompt));
  upcoming_keys_ = std::move(keys);  // requests no longer among the next are forgotten
  std::vector<PrefetchCandidate> upcoming;
  upcoming.reserve(next.size());
  for (RequestId id : next) upcoming.push_back({upcoming_keys_.at(id)});
  scheduler_->prefetch(upcoming);
}

void Engine::admit(std::vector<Pending>& pending) {
  for (Pending& p : pending) {
    const kv::BlockKey ns = namespace_of(p.request);
    auto active =
        std::make_unique<Active>(Active{p.stream, Sampler(p.request.sampling, p.seed), {}, {}, 0, {}, {}});
    // A constrained request decodes plainly: drafts are not held to its grammar.
    active->spec.wanted = spec_ != nullptr && p.request.speculative && p.request.constraint == nullptr;
    active->spec.usage.eligible = active->spec.wanted;
    active->timings.arrival = p.arrival;
    active->usage.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
    active->constraint = std::move(p.request.constraint);
    if (config_.tokenizer != nullptr) {
      active->text.emplace(*config_.tokenizer, p.request.stop,
                           OutputTextOptions{p.request.shown_special_tokens, p.request.show_special_tokens});
    }
    active->export_kv = p.request.export_kv;
    active->ns = ns;
    const Status st = scheduler_->add(p.id, p.request.prompt, p.request.stop, p.request.scheduling, ns);
    if (st.is_ok() && p.request.kv_import != nullptr) kv_->stage_import(p.id, std::move(p.request.kv_import));
    active_.emplace(p.id, std::move(active));
    counters_.prompt_tokens += static_cast<int64_t>(p.request.prompt.size());
    if (!st.is_ok()) finish(p.id, FinishReason::kError, st);
  }
}

void Engine::apply_cancels(std::vector<RequestId>& cancels) {
  std::vector<RequestId> done;
  for (RequestId id : cancels) {
    if (!scheduler_->cancel(id)) continue;  // unknown or already finished
    done.push_back(id);
    ++counters_.finished_requests;
  }
  if (done.empty()) return;
  publish_metrics();  // blocks are back before the consumer sees the final event
  for (RequestId id : done) finish(id, FinishReason::kCancelled, Status::ok());
}

void Engine::finish(RequestId id, FinishReason reason, Status status) {
  auto it = active_.find(id);
  LADDER_CHECK(it != active_.end(), "finish() of a request that is not active");
  Active& a = *it->second;
  const auto now = Clock::now();
  a.timings.finished = now;
  StreamEvent e;
  e.kind = StreamEvent::Kind::kFinished;
  e.finish = reason;
  e.status = std::move(status);
  a.usage.speculative = a.spec.usage;
  e.usage = a.usage;
  e.timings = std::move(a.timings);
  e.n_preemptions = a.n_preemptions;
  if (a.text && (reason == FinishReason::kStop || reason == FinishReason::kLength)) e.text = a.text->finish();
  std::shared_ptr<TokenStream> stream = a.stream;
  if (spec_) spec_->release(id);
  const int64_t served = a.usage.prompt_tokens + a.usage.completion_tokens;
  active_.erase(it);
  bool admitted_more = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    for (uint64_t next : admission_->finish(id, served, now)) {
      auto q = queued_.find(next);
      LADDER_CHECK(q != queued_.end(), "an admitted ticket has no queued request");
      inbox_.push_back(std::move(q->second));
      queued_.erase(q);
      admitted_more = true;
    }
  }
  if (admitted_more) cv_.notify_all();
  stream->push(std::move(e));
}

// The ragged batch of one step: token spans and block tables point into the
// scheduler's sequences and the KV manager, which do not change until
// update_from_runs(). A chunk verifying a draft evaluates its last token and
// the draft and returns logits for each of those positions.
struct Engine::StepBatch {
  std::vector<model::BatchSequence> batch;
  std::vector<std::vector<int32_t>> verified;  // last token + draft, per verifying chunk
  std::vector<std::vector<float>> key_mass;    // snap eviction: attention each chunk's keys receive
};

// The step's sampling rows (chunks that sample), in batch order, with what
// was drawn for each: the tokens kept, their text, whether a stop string
// ended the run, and a prefill worker's KV export.
struct Engine::StepRows {
  size_t n = 0;
  std::vector<const ScheduledChunk*> chunks;
  std::vector<size_t> row0;  // first logit row of each
  std::vector<Active*> actives;
  std::vector<const Sequence*> seqs;
  std::vector<std::vector<SampledToken>> details;
  std::vector<std::vector<int32_t>> emitted;
  std::vector<std::vector<std::string>> texts;
  std::unique_ptr<bool[]> stopped;
  std::vector<std::shared_ptr<const kv::KvBlockSet>> exports;
  bool verified_any = false;
};

bool Engine::step() {
  int64_t draft_us = 0;
  if (spec_) {
    draft_us = spec_->propose(
        *scheduler_, [this](RequestId id) -> SpecState& { return active_.at(id)->spec; }, *threads_);
    counters_.sample_us += draft_us;
  }
  // The step's cost as the speculation controller sees it: everything but
  // drafting (scheduling, the forward pass, sampling, streaming).
  const auto step_start = Clock::now();
  const SchedulerOutput out = scheduler_->schedule();
  for (RequestId id : out.preempted) ++active_.at(id)->n_preemptions;
  if (out.chunks.empty()) {
    // Only when the one running sequence preempted itself; next step admits
    // from an idle pool, where the head of the queue always fits (validate()
    // checks that each sequence fits the pool alone).
    LADDER_CHECK(!out.preempted.empty(), "the scheduler made no progress and preempted nothing");
    publish_metrics();
    return false;
  }

  StepBatch b;
  build_batch(out, b);
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  logits_.resize(static_cast<size_t>(model::LlamaModel::logit_rows(b.batch)) * n_vocab);
  const auto forward_start = Clock::now();
  const Status st = model_.forward(b.batch, kv_->layers(), logits_, *threads_);
  const double floor_ms =
      std::max(config_.step_delay_ms, static_cast<double>(out.n_tokens) * config_.row_delay_ms);
  if (floor_ms > 0) {  // testing only (EngineConfig::step_delay_ms)
    std::this_thread::sleep_until(forward_start + std::chrono::duration<double, std::milli>(floor_ms));
  }
  const auto forward_end = Clock::now();
  const int64_t forward_us =
      std::chrono::duration_cast<std::chrono::microseconds>(forward_end - forward_start).count();
  ++counters_.steps;
  counters_.computed_tokens += out.n_tokens;
  counters_.forward_us += forward_us;
  if (!st.is_ok()) {
    for (const ScheduledChunk& c : out.chunks) scheduler_->cancel(c.id);
    counters_.finished_requests += static_cast<int64_t>(out.chunks.size());
    publish_metrics();
    for (const ScheduledChunk& c : out.chunks) finish(c.id, FinishReason::kError, st);
    return true;
  }
  for (size_t i = 0; i < b.key_mass.size(); ++i) kv_->add_attention(out.chunks[i].id, b.key_mass[i]);

  StepRows rows = sample_rows(out, forward_us);
  counters_.sample_us += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - forward_end).count();
  const std::vector<SequenceUpdate> updates =
      scheduler_->update_from_runs(out, rows.emitted, std::span<const bool>(rows.stopped.get(), rows.n));
  counters_.generated_tokens += static_cast<int64_t>(updates.size());
  for (const SequenceUpdate& u : updates) {
    if (u.finish != FinishReason::kNone) ++counters_.finished_requests;
  }
  publish_metrics();
  emit(updates, rows);
  if (spec_) observe_speculation(out, rows.verified_any, static_cast<int64_t>(updates.size()), step_start, draft_us);
  if (config_.on_step) {
    config_.on_step({counters_.steps, out.n_tokens, static_cast<int64_t>(out.chunks.size()),
                     static_cast<int64_t>(out.preempted.size())});
  }
  return true;
}

void Engine::build_batch(const SchedulerOutput& out, StepBatch& b) {
  b.batch.reserve(out.chunks.size());
  b.verified.resize(out.chunks.size());
  const bool want_mass = config_.kv_eviction.kind == kv::EvictionKind::kSnap;
  b.key_mass.resize(want_mass ? out.chunks.size() : 0);
  const auto now = Clock::now();
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const ScheduledChunk& c = out.chunks[i];
    const Sequence* seq = scheduler_->find(c.id);
    LADDER_CHECK(seq != nullptr, "a scheduled sequence is unknown");
    Active& a = *active_.at(c.id);
    if (!a.timings.prefill_start) {
      a.timings.prefill_start = now;
      a.usage.cached_prompt_tokens = seq->prefix_hit_tokens;
    }
    model::BatchSequence bs;
    bs.start_pos = c.start_pos;
    bs.block_table = scheduler_->block_table(c.id);
    if (want_mass) {
      b.key_mass[i].assign(bs.block_table.size(), 0.0f);
      bs.key_mass = b.key_mass[i];
    }
    if (c.n_draft > 0) {
      LADDER_CHECK(c.n_tokens == c.n_draft + 1 && static_cast<int64_t>(seq->draft.size()) == c.n_draft,
                   "a verifying chunk holds the last token and the draft");
      b.verified[i].push_back(seq->tokens.back());
      b.verified[i].insert(b.verified[i].end(), seq->draft.begin(), seq->draft.end());
      bs.tokens = b.verified[i];
      bs.logits = model::BatchSequence::Logits::kAll;
    } else {
      bs.tokens = std::span(seq->tokens).subspan(static_cast<size_t>(c.start_pos), static_cast<size_t>(c.n_tokens));
      bs.logits = c.sample ? model::BatchSequence::Logits::kLast : model::BatchSequence::Logits::kNone;
    }
    b.batch.push_back(bs);
  }
}

Engine::StepRows Engine::sample_rows(const SchedulerOutput& out, int64_t forward_us) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  StepRows rows;
  rows.n = static_cast<size_t>(out.n_sampling());
  const size_t n_rows = rows.n;
  rows.chunks.reserve(n_rows);
  size_t next_row = 0;
  for (const ScheduledChunk& c : out.chunks) {
    if (!c.sample) continue;
    rows.chunks.push_back(&c);
    rows.row0.push_back(next_row);
    next_row += static_cast<size_t>(c.n_draft) + 1;
  }
  rows.actives.resize(n_rows);
  rows.seqs.resize(n_rows);
  for (size_t r = 0; r < n_rows; ++r) {
    rows.actives[r] = active_.at(rows.chunks[r]->id).get();
    rows.seqs[r] = scheduler_->find(rows.chunks[r]->id);
  }
  // Sampling rows are independent (each request has its own Sampler and RNG),
  // so they run across the op pool; the result does not depend on which
  // thread takes a row. A full-vocabulary log-softmax per row is not free at
  // 32k+ vocabularies and dozens of rows. A verifying chunk's rows are drawn
  // in order, stopping at the first rejection (sample_verified).
  rows.details.resize(n_rows);
  threads_->parallel_for(static_cast<int64_t>(n_rows), 1, [&](int64_t begin, int64_t end) {
    for (auto r = static_cast<size_t>(begin); r < static_cast<size_t>(end); ++r) {
      const auto n_draft = static_cast<size_t>(rows.chunks[r]->n_draft);
      const std::span<float> logits = std::span(logits_).subspan(rows.row0[r] * n_vocab, (n_draft + 1) * n_vocab);
      TokenConstraint* constraint = rows.actives[r]->constraint.get();
      LADDER_CHECK(constraint == nullptr || n_draft == 0, "a constrained request was given a draft");
      if (constraint != nullptr) constraint->mask(logits);
      const Sequence& seq = *rows.seqs[r];
      rows.details[r] = sample_verified(rows.actives[r]->sampler, logits, n_vocab, seq.prompt(), seq.output(),
                                        std::span(seq.draft).first(n_draft));
      if (constraint != nullptr) {
        for (const SampledToken& t : rows.details[r]) constraint->accept(t.token);
      }
    }
  });
  // Output text and stop strings, in row order; a stop string ends a
  // request's run at the token that completes it.
  rows.emitted.resize(n_rows);
  rows.texts.resize(n_rows);
  rows.stopped.reset(new bool[n_rows]());
  for (size_t r = 0; r < n_rows; ++r) {
    Active& a = *rows.actives[r];
    if (rows.chunks[r]->n_draft > 0) {
      rows.verified_any = true;
      spec_->record_cycle(a.spec, rows.chunks[r]->n_draft, static_cast<int64_t>(rows.details[r].size()) - 1,
                          forward_us);
    }
    for (const SampledToken& t : rows.details[r]) {
      rows.emitted[r].push_back(t.token);
      if (!a.text) continue;
      OutputText::Step step = a.text->push(t.token);
      rows.texts[r].push_back(std::move(step.text));
      if (step.stopped) {
        rows.stopped[r] = true;
        break;
      }
    }
    rows.details[r].resize(rows.emitted[r].size());
  }
  if (rows.verified_any) spec_->record_verify_step(forward_us);
  // Exports are read while the sequences still hold their blocks.
  rows.exports.resize(n_rows);
  for (size_t r = 0; r < n_rows; ++r) {
    if (rows.actives[r]->export_kv && !rows.actives[r]->timings.first_token) {
      rows.exports[r] = export_prompt_blocks(rows.chunks[r]->id, *rows.seqs[r], rows.actives[r]->ns);
    }
  }
  return rows;
}

void Engine::emit(const std::vector<SequenceUpdate>& updates, StepRows& rows) {
  // Updates come in row order, one per token kept (a finish drops the rest
  // of its row's run).
  const auto sampled_at = Clock::now();
  size_t r = 0, j = 0;
  for (const SequenceUpdate& u : updates) {
    while (rows.chunks[r]->id != u.id) {
      ++r;
      j = 0;
      LADDER_CHECK(r < rows.n, "an update for a request that sampled nothing");
    }
    LADDER_CHECK(j < rows.details[r].size() && rows.details[r][j].token == u.token,
                 "updates follow the emitted tokens");
    Active& a = *rows.actives[r];
    if (Status failed = a.constraint ? a.constraint->status() : Status::ok(); !failed.is_ok()) {
      // The constraint gave up at this step (a constrained row samples one
      // token): the token drawn under its last mask is dropped, and the
      // request ends with the constraint's error.
      if (u.finish == FinishReason::kNone) {  // a finish removed it already
        scheduler_->cancel(u.id);
        ++counters_.finished_requests;
        publish_metrics();  // its blocks are back before the final event
      }
      ++j;
      finish(u.id, FinishReason::kError, std::move(failed));
      continue;
    }
    if (!a.timings.first_token) a.timings.first_token = sampled_at;
    a.timings.token_times.push_back(sampled_at);
    ++a.usage.completion_tokens;
    StreamEvent e;
    e.kind = StreamEvent::Kind::kToken;
    e.token = std::move(rows.details[r][j]);
    if (j < rows.texts[r].size()) e.text = std::move(rows.texts[r][j]);
    if (j == 0) e.kv_export = std::move(rows.exports[r]);
    ++j;
    a.stream->push(std::move(e));
    if (u.finish != FinishReason::kNone) finish(u.id, u.finish, Status::ok());
  }
}

void Engine::observe_speculation(const SchedulerOutput& out, bool verified_any, int64_t n_updates,
                                 Clock::time_point step_start, int64_t draft_us) {
  int64_t attention_work = 0;  // each row attends its position and those before
  for (const ScheduledChunk& c : out.chunks) attention_work += c.n_tokens * (c.start_pos + (c.n_tokens + 1) / 2);
  const int64_t step_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - step_start).count();
  bool pure_decode = true;  // every chunk samples one token, or verifies a draft
  for (const ScheduledChunk& c : out.chunks) pure_decode = pure_decode && c.sample && c.n_tokens == c.n_draft + 1;
  if (pure_decode) {
    // Only decode steps, plain or verifying, teach the step cost: those are
    // the sizes the controller predicts. A prompt chunk's rows cost what a
    // compute-bound pass costs per row, and a line fitted through them
    // overstates what a few more rows cost a memory-bound decode step.
    spec_->observe_step(out.n_tokens, attention_work, step_us);
    spec_->observe_outcome(verified_any, static_cast<int64_t>(out.chunks.size()), n_updates, step_us + draft_us);
  }
}

std::shared_ptr<const kv::KvBlockSet> Engine::export_prompt_blocks(RequestId id, const Sequence& seq,
                                                                  const kv::BlockKey& ns) const {
  // The decode side computes the last prompt token itself (its logits start
  // the output), so the blocks before it are what it needs.
  const int64_t n_blocks = (seq.n_prompt - 1) / kv_->block_size();
  auto set = std::make_shared<kv::KvBlockSet>(
      kv::export_blocks(kv_->storage(), scheduler_->block_table(id), ns, seq.prompt(), 0, n_blocks));
  set->model_digest = config_.model_digest;
  set->tokenizer_digest = config_.tokenizer_digest;
  return set;
}

}  // namespace ladder::engine
