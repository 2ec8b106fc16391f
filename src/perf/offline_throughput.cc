#include "perf/offline_throughput.h"

#include <chrono>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "perf/synthetic_requests.h"

namespace ladder::perf {

using engine::Engine;
using engine::EngineConfig;
using engine::Request;
using engine::StreamEvent;
using engine::Submission;
using engine::TokenStream;
using engine::EngineMetrics;


Result<OfflineThroughput> measure_offline_throughput(const model::LlamaModel& model, const OfflineOptions& o) {
  const model::ModelConfig& mc = model.config();
  if (o.requests < 1 || o.prompt_tokens < 1 || o.output_tokens < 1) {
    return invalid_argument("requests, prompt and output tokens must be positive");
  }
  if (o.prompt_tokens + o.output_tokens > mc.context_length) {
    return out_of_range("prompt + output tokens (" + std::to_string(o.prompt_tokens + o.output_tokens) +
                        ") exceed the model's context of " + std::to_string(mc.context_length));
  }
  EngineConfig cfg;
  cfg.n_threads = o.n_threads;
  cfg.prefix_caching = false;
  cfg.kv_dtype = o.kv_dtype;
  cfg.scheduler.max_batch_tokens = o.max_batch_tokens;
  cfg.scheduler.max_running = o.max_running;
  cfg.speculative = o.speculative;
  const int64_t blocks_per_request = (o.prompt_tokens + o.output_tokens + cfg.block_size - 1) / cfg.block_size;
  cfg.n_kv_blocks = static_cast<int32_t>(o.requests * blocks_per_request + 16);
  LADDER_ASSIGN_OR_RETURN(auto engine, Engine::create(model, cfg));

  std::vector<Request> requests;
  for (int64_t i = 0; i < o.requests; ++i) {
    Request r;
    r.prompt = synthetic_tokens(static_cast<uint64_t>(i), o.prompt_tokens, mc.n_vocab);
    r.sampling.temperature = o.sampled ? 0.8f : 0.0f;
    r.sampling.top_p = o.sampled ? 0.95f : 1.0f;
    r.sampling.seed = static_cast<uint64_t>(i);
    r.stop.max_tokens = o.output_tokens;
    requests.push_back(std::move(r));
  }

  using Secs = std::chrono::duration<double>;
  std::vector<std::vector<int32_t>> solo;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Request& r : requests) {
    LADDER_ASSIGN_OR_RETURN(Submission s, engine->submit(r));
    solo.push_back(drain_tokens(*s.stream));
  }
  const auto t1 = std::chrono::steady_clock::now();
  const EngineMetrics before = engine->metrics();
  std::vector<Submission> subs;
  for (const Request& r : requests) {
    LADDER_ASSIGN_OR_RETURN(Submission s, engine->submit(r));
    subs.push_back(std::move(s));
  }
  std::vector<std::vector<int32_t>> together;
  for (Submission& s : subs) together.push_back(drain_tokens(*s.stream));
  const auto t2 = std::chrono::steady_clock::now();
  const EngineMetrics after = engine->metrics();

  OfflineThroughput r;
  r.one_by_one_s = Secs(t1 - t0).count();
  r.together_s = Secs(t2 - t1).count();
  const auto out_tokens = static_cast<double>(o.requests * o.output_tokens);
  r.one_by_one_tok_per_s = out_tokens / r.one_by_one_s;
  r.together_tok_per_s = out_tokens / r.together_s;
  r.speedup = r.one_by_one_s / r.together_s;
  const auto steps = static_cast<double>(after.steps - before.steps);
  r.tokens_per_step = steps > 0 ? static_cast<double>(after.computed_tokens - before.computed_tokens) / steps : 0;
  r.forward_share = static_cast<double>(after.forward_us - before.forward_us) / 1e6 / r.together_s;
  r.sample_share = static_cast<double>(after.sample_us - before.sample_us) / 1e6 / r.together_s;
  r.outputs_match = together == solo;
  return r;
}

}  // namespace ladder::perf
