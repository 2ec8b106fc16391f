// Engine: admission and the step loop. One thread owns the scheduler, the KV
// cache manager and the model calls; callers submit requests and cancel them
// from any thread and read each request's TokenStream.
//
// submit() validates a request against the engine's bounds (the only place
// input and output limits live), then offers it to admission: one queue for
// every tenant, with reservations, priorities and deadline feasibility
// (AdmissionController). It runs at once, waits in the queue (bounded; it is
// dropped with a deadline_exceeded error when its deadline passes there), or
// is refused with a reason and a retry-after.
//
// Each step: drain submissions and cancellations -> Scheduler::schedule() ->
// one ragged batch (model::BatchSequence per scheduled chunk, with its span of
// tokens and its block table) -> LlamaModel::forward -> each sampling
// sequence's own Sampler -> output text and stop strings -> 
// Scheduler::update_from_output() -> metrics -> stream events. The model is
// batch-invariant, so how the scheduler groups and chunks sequences never
// changes their tokens.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "engine/admission.h"
#include "engine/engine_metrics.h"
#include "engine/request.h"
#include "engine/request_id.h"
#include "engine/scheduler.h"
#include "engine/speculator.h"
#include "engine/token_stream.h"
#include "kv/kv_cache_manager.h"
#include "model/llama_model.h"
#include "ops/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace ladder::engine {

// What one step did, for on_step observers.
struct StepReport {
  int64_t step = 0;  // 1-based
  int64_t n_tokens = 0;
  int64_t n_sequences = 0;
  int64_t n_preempted = 0;
};

struct EngineConfig {
  // KV cache: n_kv_blocks when > 0, else as many as fit kv_memory_bytes.
  int32_t n_kv_blocks = 0;
  size_t kv_memory_bytes = size_t{256} << 20;
  int block_size = kv::kDefaultBlockSize;
  // Half precision by default: half the KV memory (twice the sequences) and
  // half the attention bandwidth of F32, as llama.cpp and vLLM default to.
  TensorType kv_dtype = TensorType::kF16;
  bool prefix_caching = true;
  // KV eviction (kv/kv_eviction.h): a per-sequence token budget past which a
  // sequence keeps only its sink and recent blocks. Off by default.
  kv::EvictionPolicy kv_eviction;
  // Host KV tier (kv/host_tier.h): bytes for blocks the pool gives up, which
  // come back by prefetch instead of being recomputed. 0 = none. Needs
  // prefix_caching and room for one block.
  size_t kv_host_bytes = 0;
  // Step budget, running sequences (also admission's capacity), chunking;
  // context_length 0 (or beyond the model's) means the model's. Its tenant
  // token shares are set from `tenants`.
  SchedulerConfig scheduler;
  // Request bounds: prompt tokens (0: context - 1) and max_tokens (0: context).
  int64_t max_input_tokens = 0;
  int64_t max_output_tokens = 0;
  // Admission: one budget per tenant (empty: one tenant, no reservation);
  // requests waiting for a running slot, all tenants together.
  std::vector<TenantBudget> tenants;
  int32_t max_queue = 256;
  double initial_service_ms = 1000;  // run-time estimate before one is measured
  int n_threads = 0;  // the op thread pool, caller included; <= 0: all cores
  // Part of every prefix-cache key (DESIGN.md invariant 2).
  std::string model_digest;
  std::string tokenizer_digest;
  // Detokenizes output (StreamEvent::text) and matches stop strings; must
  // outlive the engine. Null: token ids only, stop strings refused.
  const tokenizer::Tokenizer* tokenizer = nullptr;
  // Speculative decoding (rung 4): a draft, k and whether the engine adapts
  // k and turns speculation off where its measurements say it loses.
  SpeculativeConfig speculative;
  // Testing only, a simulated roofline: a forward pass of R batch tokens
  // takes at least max(step_delay_ms, R x row_delay_ms) (it sleeps out the
  // rest), so a test can make a server slower than any machine it runs on
  // (a bound on tokens per second that holds on the fastest CPU), and with
  // both set, memory-bound below step_delay_ms / row_delay_ms rows and
  // compute-bound above, whatever the CPU. The pass's measured time includes
  // the sleep, as the speculation controller sees it. 0 in production.
  double step_delay_ms = 0;
  double row_delay_ms = 0;
  // The share of the wall clock the loop thread may use the CPU (0 < f <= 1):
  // after each step it rests c (1 - f) / f, c being the CPU time it used
  // since its last rest, so its CPU time stays at most f of the elapsed
  // time. 1: no rest. A background engine's CPU budget (the shadow
  // reference, server/shadow.h, which runs one op thread).
  double max_busy_fraction = 1;
  // The loop thread runs at the lowest CPU priority (nice 19), yielding to
  // every other thread of the machine: a background engine (with one op
  // thread, all its work is on the loop thread).
  bool background = false;
  // Called on the loop thread after each step's events are pushed (tracing,
  // tests that need a step boundary). The loop waits for it to return.
  std::function<void(const StepReport&)> on_step;
};

// Staging slots the KV storage gets in a staged format (q4; 0 in others),
// each slot_bytes (kv::kv_staging_bytes) and part of kv_memory_bytes: enough
// for every block one step can leave partly filled, but at most an eighth of
// kv_memory_bytes (when sized from it) and at least what one sequence's
// largest chunk needs.
int32_t kv_staging_slots_for(const EngineConfig& config, size_t slot_bytes);

// The KV storage shape of a model with these dimensions under `config`: its
// format and block size, config.n_kv_blocks blocks or as many as fit
// kv_memory_bytes, and the staging slots a staged format needs. The engine
// and a model draft take theirs from here (a draft with its own layer count).
Result<kv::KvShape> plan_kv_shape(int n_layers, int n_kv_heads, int head_dim, const EngineConfig& config);

struct Submission {
  RequestId id = 0;
  std::shared_ptr<TokenStream> stream;
  bool queued = false;            // waiting for a running slot
  double estimated_wait_ms = 0;   // when queued
  int64_t max_tokens = 0;         // resolved bound on output tokens
};

class Engine {
 public:
  // The model must outlive the engine. storage: where KV blocks live; null =
  // an arena sized by the config. Errors: a KV pool that cannot be sized or
  // allocated, a bad scheduler or tenant config.
  static Result<std::unique_ptr<Engine>> create(const model::LlamaModel& model, const EngineConfig& config,
                                                std::unique_ptr<kv::KvStorage> storage = nullptr);
  ~Engine();  // shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and admits or queues a request. Errors (each with a reason and,
  // where the request is at fault, the field): invalid sampling parameters,
  // token ids or stop strings (kInvalidArgument), a prompt or max_tokens
  // beyond the bounds, the context or the pool (kOutOfRange), no capacity now
  // -- queue full, tenant queue full, deadline infeasible --
  // (kResourceExhausted, with retry-after), a stopped engine
  // (kFailedPrecondition).
  Result<Submission> submit(Request request);
  // Cancels a request (queued or running) at the next step boundary: its
  // blocks are freed and its stream ends with FinishReason::kCancelled.
  // Unknown or finished ids are ignored.
  void cancel(RequestId id);
  // Cancels every request in flight.
  void cancel_all();

  EngineMetrics metrics() const;
  const EngineConfig& config() const { return config_; }
  int32_t n_kv_blocks() const { return kv_->n_blocks(); }
  int64_t context_length() const { return scheduler_->config().context_length; }
  int64_t max_input_tokens() const { return max_input_; }
  int64_t max_output_tokens() const { return max_output_; }
  std::string kv_format_name() const { return kv_->format_name(); }
  // The KV layout without a pool (n_blocks and n_staging 0): what a decode
  // worker's KV receiver checks incoming blocks against.
  kv::KvShape kv_wire_shape() const {
    kv::KvShape s = kv_->storage().shape();
    s.n_blocks = 0;
    s.n_staging = 0;
    return s;
  }
  // Requests submitted and not yet finished (queued or running).
  int64_t in_flight() const;

  // Stops the loop at the next step boundary; requests still in flight end
  // with kError ("engine shut down"). request_stop() returns at once;
  // shutdown() also waits for the loop. Both idempotent.
  void request_stop();
  void shutdown();

 private:
  struct Pending {
    RequestId id;
    Request request;
    std::shared_ptr<TokenStream> stream;
    Clock::time_point arrival;
    uint64_t seed;
  };
  struct Active;

  Engine(const model::LlamaModel& model, const EngineConfig& config);
  Status validate(Request& request) const;
  void loop();
  // One step with the lock released; returns false when there was nothing to do.
  // Its phases: schedule, build_batch, the forward pass, sample_rows,
  // the scheduler's update, emit, observe_speculation.
  bool step();
  struct StepBatch;
  struct StepRows;
  void build_batch(const SchedulerOutput& out, StepBatch& batch);
  StepRows sample_rows(const SchedulerOutput& out, int64_t forward_us);
  void emit(const std::vector<SequenceUpdate>& updates, StepRows& rows);
  void observe_speculation(const SchedulerOutput& out, bool verified_any, int64_t n_updates,
                           Clock::time_point step_start, int64_t draft_us);
  void admit(std::vector<Pending>& pending);
  void apply_cancels(std::vector<RequestId>& cancels);
  // Ends a request that never reached the scheduler (queued, expired).
  static void end_unstarted(Pending& p, FinishReason reason, Status status);
  void finish(RequestId id, FinishReason reason, Status status);
  void publish_metrics();
  // The prefix-cache namespace of a request's blocks.
  kv::BlockKey namespace_of(const Request& request) const;
  // Host KV tier: between steps, prefetch for the requests that run next
  // (Scheduler::prefetch): admitted ones not yet in the scheduler, then the
  // admission queue by arrival. A request's chain keys are hashed once and
  // kept in upcoming_keys_ while it stays among them.
  void prefetch_upcoming();
  // Request::export_kv: the KV of a computed prompt's full blocks before its
  // last token.
  std::shared_ptr<const kv::KvBlockSet> export_prompt_blocks(RequestId id, const Sequence& seq,
                                                             const kv::BlockKey& ns) const;

  const model::LlamaModel& model_;
  EngineConfig config_;
  int64_t max_input_ = 0;
  int64_t max_output_ = 0;
  std::unique_ptr<kv::KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ops::ThreadPool> threads_;
  std::unique_ptr<Speculator> spec_;  // null without a draft

  // Loop-thread state.
  std::unordered_map<RequestId, std::unique_ptr<Active>> active_;
  std::unordered_map<RequestId, std::vector<kv::BlockKey>> upcoming_keys_;  // prefetch_upcoming's
  std::vector<float> logits_;  // [n_sampling][n_vocab]
  EngineMetrics counters_;

  // Shared with callers, under mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<AdmissionController> admission_;
  std::unordered_map<RequestId, Pending> queued_;  // waiting in admission
  std::vector<Pending> inbox_;                      // admitted, not yet in the scheduler
  std::vector<RequestId> cancels_;
  bool cancel_all_ = false;
  int64_t in_flight_ = 0;
  bool stopping_ = false;
  EngineMetrics published_;

  std::thread thread_;
};

}  // namespace ladder::engine
