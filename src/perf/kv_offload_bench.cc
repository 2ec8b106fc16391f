#include "perf/kv_offload_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "perf/synthetic_requests.h"

namespace ladder::perf {
namespace {

// One pass over the workload on a fresh engine: outputs in request order.
Result<std::vector<std::vector<int32_t>>> run_once(const model::LlamaModel& model, const engine::EngineConfig& cfg,
                                                   const std::vector<engine::Request>& requests, int64_t concurrency,
                                                   KvOffloadRun& run) {
  LADDER_ASSIGN_OR_RETURN(auto eng, engine::Engine::create(model, cfg));
  std::vector<std::vector<int32_t>> out;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < requests.size(); i += static_cast<size_t>(concurrency)) {
    std::vector<std::shared_ptr<engine::TokenStream>> streams;
    for (size_t j = i; j < std::min(requests.size(), i + static_cast<size_t>(concurrency)); ++j) {
      LADDER_ASSIGN_OR_RETURN(engine::Submission s, eng->submit(requests[j]));
      streams.push_back(s.stream);
    }
    for (auto& s : streams) out.push_back(drain_tokens(*s));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const engine::EngineMetrics m = eng->metrics();
  run.seconds = run.seconds == 0 ? s : std::min(run.seconds, s);
  run.prompt_tokens = m.prompt_tokens;
  run.prefix_hit_tokens = m.prefix_hit_tokens;
  run.computed_tokens = m.computed_tokens;
  run.host = m.kv_host;
  return out;
}

}  // namespace

Result<KvOffloadReport> measure_kv_offload(const model::LlamaModel& model, const KvOffloadOptions& o) {
  const model::ModelConfig& mc = model.config();
  if (o.families < 1 || o.rounds < 1 || o.prefix_tokens < 1 || o.suffix_tokens < 1 || o.output_tokens < 1 ||
      o.concurrency < 1 || o.repeats < 1) {
    return invalid_argument("families, rounds, token counts, concurrency and repeats must be positive");
  }
  const int64_t len = o.prefix_tokens + o.suffix_tokens + o.output_tokens;
  if (len > mc.context_length) {
    return out_of_range(fmt::format("prefix + suffix + output ({} tokens) exceed the model's context of {}", len,
                                    mc.context_length));
  }
  engine::EngineConfig cfg;
  cfg.n_threads = o.n_threads;
  cfg.kv_dtype = o.kv_dtype;
  const int64_t per_request = (len + cfg.block_size - 1) / cfg.block_size;
  cfg.n_kv_blocks = o.kv_blocks > 0 ? o.kv_blocks : static_cast<int32_t>(2 * o.concurrency * per_request);
  if (cfg.n_kv_blocks < per_request) {
    return out_of_range(fmt::format("a request needs {} KV blocks; --kv-blocks is {}", per_request, cfg.n_kv_blocks));
  }

  std::vector<engine::Request> requests;
  for (int64_t r = 0; r < o.rounds; ++r) {
    for (int64_t f = 0; f < o.families; ++f) {
      engine::Request q;
      q.prompt = synthetic_tokens(static_cast<uint64_t>(f), o.prefix_tokens, mc.n_vocab);
      const auto suffix = synthetic_tokens(static_cast<uint64_t>(1000 + r * o.families + f), o.suffix_tokens, mc.n_vocab);
      q.prompt.insert(q.prompt.end(), suffix.begin(), suffix.end());
      q.sampling.temperature = 0.0f;
      q.stop.max_tokens = o.output_tokens;
      requests.push_back(std::move(q));
    }
  }

  KvOffloadReport report;
  report.kv_blocks = cfg.n_kv_blocks;
  report.prefix_blocks = o.families * (o.prefix_tokens / cfg.block_size);
  engine::EngineConfig tiered = cfg;
  tiered.kv_host_bytes = o.host_bytes;
  report.outputs_match = true;
  for (int i = 0; i < o.repeats; ++i) {
    LADDER_ASSIGN_OR_RETURN(auto a, run_once(model, cfg, requests, o.concurrency, report.without));
    LADDER_ASSIGN_OR_RETURN(auto b, run_once(model, tiered, requests, o.concurrency, report.with));
    report.outputs_match = report.outputs_match && a == b;
  }
  return report;
}

}  // namespace ladder::perf
