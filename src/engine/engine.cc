#include "engine/engine.h"

#include <fmt/format.h>

#include <random>

#include "common/check.h"
#include "engine/sampler.h"

namespace ladder::engine {

// A request the loop is serving: what the scheduler does not keep.
struct Engine::Active {
  std::shared_ptr<TokenStream> stream;
  Sampler sampler;
  RequestTimings timings;
  Usage usage;
  int32_t n_preemptions = 0;
};

Result<std::unique_ptr<Engine>> Engine::create(const model::LlamaModel& model, const EngineConfig& config) {
  const model::ModelConfig& mc = model.config();
  if (config.block_size < 1 || config.block_size > 1024) {
    return invalid_argument(fmt::format("KV block size must be in [1, 1024], got {}", config.block_size));
  }
  if (config.scheduler.max_batch_tokens < 1 || config.scheduler.max_running < 1) {
    return invalid_argument("the step token budget and max running sequences must be positive");
  }
  if (mc.context_length < 2) return invalid_argument("the model's context length is below 2");
  std::unique_ptr<Engine> e(new Engine(model, config));

  kv::KvShape shape{.n_layers = static_cast<int>(mc.n_layers),
                    .n_kv_heads = static_cast<int>(mc.n_kv_heads),
                    .head_dim = static_cast<int>(mc.head_dim),
                    .block_size = config.block_size,
                    .n_blocks = config.n_kv_blocks,
                    .dtype = config.kv_dtype};
  if (shape.n_blocks <= 0) {
    LADDER_ASSIGN_OR_RETURN(shape.n_blocks, kv::KvStorage::blocks_that_fit(shape, config.kv_memory_bytes));
    if (shape.n_blocks < 1) {
      return invalid_argument(
          fmt::format("kv_memory_bytes {} holds not one KV block", config.kv_memory_bytes));
    }
  }
  LADDER_ASSIGN_OR_RETURN(e->storage_, kv::KvStorage::create(shape));
  e->kv_buffers_.k = e->storage_->k_layers();
  e->kv_buffers_.v = e->storage_->v_layers();
  e->pool_ = std::make_unique<kv::BlockPool>(shape.n_blocks, shape.block_size);
  if (config.prefix_caching) e->cache_ = std::make_unique<kv::PrefixCache>(*e->pool_);

  SchedulerConfig sc = config.scheduler;
  if (sc.context_length <= 0 || sc.context_length > mc.context_length) sc.context_length = mc.context_length;
  e->scheduler_ = std::make_unique<Scheduler>(sc, *e->pool_, e->cache_.get());
  e->threads_ = std::make_unique<ops::ThreadPool>(config.n_threads);
  e->counters_.kv_blocks_total = shape.n_blocks;
  e->publish_metrics();
  e->thread_ = std::thread([raw = e.get()] { raw->loop(); });
  return e;
}

Engine::Engine(const model::LlamaModel& model, const EngineConfig& config) : model_(model), config_(config) {}

Engine::~Engine() {
  shutdown();
}

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
  LADDER_RETURN_IF_ERROR(request.sampling.validate());
  const int64_t n_vocab = model_.config().n_vocab;
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    const int32_t t = request.prompt[i];
    if (t < 0 || t >= n_vocab) {
      return invalid_argument(
          fmt::format("prompt token {} at index {} is outside the vocabulary [0, {})", t, i, n_vocab));
    }
  }
  LADDER_RETURN_IF_ERROR(scheduler_->validate(static_cast<int64_t>(request.prompt.size()), request.stop));

  Pending p;
  p.stream = std::make_shared<TokenStream>();
  p.arrival = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return failed_precondition("the engine is shut down");
    if (in_flight_ >= config_.max_requests) {
      return resource_exhausted(
          fmt::format("{} requests are in flight; the limit is {}", in_flight_, config_.max_requests));
    }
    p.id = next_id_++;
    if (request.sampling.seed.has_value()) {
      p.seed = *request.sampling.seed;
    } else {
      std::random_device rd;
      p.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    p.request = std::move(request);
    ++in_flight_;
    Submission s{p.id, p.stream};
    inbox_.push_back(std::move(p));
    cv_.notify_all();
    return s;
  }
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(id);
  }
  cv_.notify_all();
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void Engine::publish_metrics() {
  EngineMetrics m = counters_;
  m.running = static_cast<int64_t>(scheduler_->n_running());
  m.kv_blocks_total = pool_->n_blocks();
  m.kv_blocks_used = pool_->n_used();
  m.kv_blocks_free = pool_->n_free();
  m.kv_blocks_cached = pool_->n_cached_free();
  m.prefix_hit_tokens = scheduler_->prefix_hit_tokens();
  m.preemptions = scheduler_->n_preemptions();
  std::lock_guard<std::mutex> lock(mu_);
  m.queue_depth = static_cast<int64_t>(scheduler_->n_waiting() + inbox_.size());
  published_ = m;
}

void Engine::loop() {
  while (true) {
    std::vector<Pending> pending;
    std::vector<RequestId> cancels;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock,
               [&] { return stopping_ || !inbox_.empty() || !cancels_.empty() || scheduler_->has_work(); });
      if (stopping_) {
        pending.swap(inbox_);
      } else {
        pending.swap(inbox_);
        cancels.swap(cancels_);
      }
    }
    admit(pending);
    bool stop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop = stopping_;
    }
    if (stop) break;
    apply_cancels(cancels);
    if (scheduler_->has_work()) {
      step();
    } else {
      publish_metrics();
    }
  }
  // Whatever is still in flight ends with an error event.
  std::vector<RequestId> left;
  for (const auto& [id, a] : active_) left.push_back(id);
  for (RequestId id : left) {
    scheduler_->cancel(id);
    finish(id, FinishReason::kError, failed_precondition("the engine shut down"));
  }
  publish_metrics();
}

void Engine::admit(std::vector<Pending>& pending) {
  for (Pending& p : pending) {
    const kv::BlockKey ns = kv::namespace_digest(
        {p.request.cache_scope, config_.model_digest, config_.tokenizer_digest, storage_->format_name()});
    auto active = std::make_unique<Active>(Active{p.stream, Sampler(p.request.sampling, p.seed), {}, {}, 0});
    active->timings.arrival = p.arrival;
    active->usage.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
    const Status st = scheduler_->add(p.id, p.request.prompt, p.request.stop, p.request.scheduling, ns);
    active_.emplace(p.id, std::move(active));
    counters_.prompt_tokens += static_cast<int64_t>(p.request.prompt.size());
    if (!st.is_ok()) finish(p.id, FinishReason::kError, st);
  }
}

void Engine::apply_cancels(std::vector<RequestId>& cancels) {
  bool any = false;
  for (RequestId id : cancels) {
    if (!scheduler_->cancel(id)) continue;  // unknown or already finished
    any = true;
    ++counters_.finished_requests;
  }
  if (!any) return;
  publish_metrics();  // blocks are back before the consumer sees the final event
  for (RequestId id : cancels) {
    if (active_.count(id) != 0) finish(id, FinishReason::kCancelled, Status::ok());
  }
}

void Engine::finish(RequestId id, FinishReason reason, Status status) {
  auto it = active_.find(id);
  LADDER_CHECK(it != active_.end(), "finish() of a request that is not active");
  Active& a = *it->second;
  a.timings.finished = Clock::now();
  StreamEvent e;
  e.kind = StreamEvent::Kind::kFinished;
  e.finish = reason;
  e.status = std::move(status);
  e.usage = a.usage;
  e.timings = std::move(a.timings);
  e.n_preemptions = a.n_preemptions;
  std::shared_ptr<TokenStream> stream = a.stream;
  active_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  stream->push(std::move(e));
}

bool Engine::step() {
  const SchedulerOutput out = scheduler_->schedule();
  for (RequestId id : out.preempted) ++active_.at(id)->n_preemptions;
  if (out.chunks.empty()) {
    // Only when the one running sequence preempted itself; next step admits
    // from an idle pool, where the head of the queue always fits (add()
    // checks that each sequence fits the pool alone).
    LADDER_CHECK(!out.preempted.empty(), "the scheduler made no progress and preempted nothing");
    publish_metrics();
    return false;
  }

  // The ragged batch: token spans and block tables point into the scheduler's
  // sequences, which do not change until update_from_output().
  std::vector<model::BatchSequence> batch;
  batch.reserve(out.chunks.size());
  const auto now = Clock::now();
  for (const ScheduledChunk& c : out.chunks) {
    const Sequence* seq = scheduler_->find(c.id);
    LADDER_CHECK(seq != nullptr, "a scheduled sequence is unknown");
    Active& a = *active_.at(c.id);
    if (!a.timings.prefill_start) {
      a.timings.prefill_start = now;
      a.usage.cached_prompt_tokens = seq->prefix_hit_tokens;
    }
    model::BatchSequence b;
    b.tokens =
        std::span(seq->tokens).subspan(static_cast<size_t>(c.start_pos), static_cast<size_t>(c.n_tokens));
    b.start_pos = c.start_pos;
    b.block_table = seq->blocks.blocks();
    b.logits = c.sample ? model::BatchSequence::Logits::kLast : model::BatchSequence::Logits::kNone;
    batch.push_back(b);
  }
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const auto n_rows = static_cast<size_t>(out.n_sampling());
  logits_.resize(n_rows * n_vocab);
  const auto forward_start = Clock::now();
  const Status st = model_.forward(batch, kv_buffers_, logits_, *threads_);
  const auto forward_end = Clock::now();
  ++counters_.steps;
  counters_.computed_tokens += out.n_tokens;
  counters_.forward_us +=
      std::chrono::duration_cast<std::chrono::microseconds>(forward_end - forward_start).count();
  if (!st.is_ok()) {
    for (const ScheduledChunk& c : out.chunks) scheduler_->cancel(c.id);
    counters_.finished_requests += static_cast<int64_t>(out.chunks.size());
    publish_metrics();
    for (const ScheduledChunk& c : out.chunks) finish(c.id, FinishReason::kError, st);
    return true;
  }

  // Sampling rows are independent (each request has its own Sampler and RNG),
  // so they run across the op pool; the result does not depend on which
  // thread takes a row. A full-vocabulary log-softmax per row is not free at
  // 32k+ vocabularies and dozens of rows.
  std::vector<const ScheduledChunk*> sampling;
  sampling.reserve(n_rows);
  for (const ScheduledChunk& c : out.chunks) {
    if (c.sample) sampling.push_back(&c);
  }
  std::vector<Active*> actives(n_rows);
  std::vector<const Sequence*> seqs(n_rows);
  for (size_t r = 0; r < n_rows; ++r) {
    actives[r] = active_.at(sampling[r]->id).get();
    seqs[r] = scheduler_->find(sampling[r]->id);
  }
  std::vector<SampledToken> details(n_rows);
  threads_->parallel_for(static_cast<int64_t>(n_rows), 1, [&](int64_t begin, int64_t end) {
    for (auto r = static_cast<size_t>(begin); r < static_cast<size_t>(end); ++r) {
      details[r] = actives[r]->sampler.sample(std::span(logits_).subspan(r * n_vocab, n_vocab),
                                              seqs[r]->prompt(), seqs[r]->output());
    }
  });
  std::vector<int32_t> sampled(n_rows);
  for (size_t r = 0; r < n_rows; ++r) sampled[r] = details[r].token;
  counters_.sample_us +=
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - forward_end).count();
  const std::vector<SequenceUpdate> updates = scheduler_->update_from_output(out, sampled);
  LADDER_CHECK(updates.size() == details.size(), "one update per sampled token");
  counters_.generated_tokens += static_cast<int64_t>(updates.size());
  for (const SequenceUpdate& u : updates) {
    if (u.finish != FinishReason::kNone) ++counters_.finished_requests;
  }
  publish_metrics();

  const auto sampled_at = Clock::now();
  for (size_t i = 0; i < updates.size(); ++i) {
    const SequenceUpdate& u = updates[i];
    Active& a = *active_.at(u.id);
    if (!a.timings.first_token) a.timings.first_token = sampled_at;
    a.timings.token_times.push_back(sampled_at);
    ++a.usage.completion_tokens;
    StreamEvent e;
    e.kind = StreamEvent::Kind::kToken;
    e.token = std::move(details[i]);
    a.stream->push(std::move(e));
    if (u.finish != FinishReason::kNone) finish(u.id, u.finish, Status::ok());
  }
  if (config_.on_step) {
    config_.on_step({counters_.steps, out.n_tokens, static_cast<int64_t>(out.chunks.size()),
                     static_cast<int64_t>(out.preempted.size())});
  }
  return true;
}

}  // namespace ladder::engine
