// Engine: the step loop. One thread owns the scheduler, the KV cache and the
// model calls; callers submit requests and cancel them from any thread and
// read each request's TokenStream.
//
// Each step: drain submissions and cancellations -> Scheduler::schedule() ->
// one ragged batch (model::BatchSequence per scheduled chunk, with its span of
// tokens and its block table) -> LlamaModel::forward -> each sampling
// sequence's own Sampler -> Scheduler::update_from_output() -> metrics ->
// stream events. The model is batch-invariant, so how the scheduler groups
// and chunks sequences never changes their tokens.
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
#include "engine/engine_metrics.h"
#include "engine/request.h"
#include "engine/request_id.h"
#include "engine/scheduler.h"
#include "engine/token_stream.h"
#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "kv/prefix_cache.h"
#include "model/llama_model.h"
#include "ops/thread_pool.h"

namespace ladder::engine {

// What one step did, for on_step observers.
struct StepReport {
  int64_t step = 0;  // 1-based
  int64_t n_tokens = 0;
  int64_t n_sequences = 0;
  int64_t n_preempted = 0;
};

struct EngineConfig {
  // KV pool: n_kv_blocks when > 0, else as many as fit kv_memory_bytes.
  int32_t n_kv_blocks = 0;
  size_t kv_memory_bytes = size_t{256} << 20;
  int block_size = kv::kDefaultBlockSize;
  // Half precision by default: half the KV memory (twice the sequences) and
  // half the attention bandwidth of F32, as llama.cpp and vLLM default to.
  TensorType kv_dtype = TensorType::kF16;
  bool prefix_caching = true;
  // context_length 0 (or beyond the model's) means the model's.
  SchedulerConfig scheduler;
  int n_threads = 0;  // the op thread pool, caller included; <= 0: all cores
  // Bound on requests submitted but not finished.
  int64_t max_requests = 4096;
  // Part of every prefix-cache key (DESIGN.md invariant 2).
  std::string model_digest;
  std::string tokenizer_digest;
  // Called on the loop thread after each step's events are pushed (tracing,
  // tests that need a step boundary). The loop waits for it to return.
  std::function<void(const StepReport&)> on_step;
};

struct Submission {
  RequestId id = 0;
  std::shared_ptr<TokenStream> stream;
};

class Engine {
 public:
  // The model must outlive the engine. Errors: a KV pool that cannot be
  // sized or allocated, a bad scheduler config.
  static Result<std::unique_ptr<Engine>> create(const model::LlamaModel& model, const EngineConfig& config);
  ~Engine();  // shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request. Errors: invalid sampling parameters or
  // token ids (kInvalidArgument), a prompt or max_tokens beyond the context or
  // the pool (kOutOfRange), too many requests in flight (kResourceExhausted),
  // a stopped engine (kFailedPrecondition).
  Result<Submission> submit(Request request);
  // Cancels a request at the next step boundary: its blocks are freed and its
  // stream ends with FinishReason::kCancelled. Unknown or finished ids are ignored.
  void cancel(RequestId id);

  EngineMetrics metrics() const;
  const EngineConfig& config() const { return config_; }
  int32_t n_kv_blocks() const { return pool_->n_blocks(); }
  int64_t context_length() const { return scheduler_->config().context_length; }

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
  void loop();
  // One step with the lock released; returns false when there was nothing to do.
  bool step();
  void admit(std::vector<Pending>& pending);
  void apply_cancels(std::vector<RequestId>& cancels);
  void finish(RequestId id, FinishReason reason, Status status);
  void publish_metrics();

  const model::LlamaModel& model_;
  EngineConfig config_;
  std::unique_ptr<kv::KvStorage> storage_;
  model::KvBuffers kv_buffers_;
  std::unique_ptr<kv::BlockPool> pool_;
  std::unique_ptr<kv::PrefixCache> cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ops::ThreadPool> threads_;

  // Loop-thread state.
  std::unordered_map<RequestId, std::unique_ptr<Active>> active_;
  std::vector<float> logits_;  // [n_sampling][n_vocab]
  EngineMetrics counters_;

  // Shared with callers, under mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> inbox_;
  std::vector<RequestId> cancels_;
  int64_t in_flight_ = 0;
  bool stopping_ = false;
  EngineMetrics published_;

  std::atomic<RequestId> next_id_{1};
  std::thread thread_;
};

}  // namespace ladder::engine
