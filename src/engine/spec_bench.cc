#include "engine/spec_bench.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>

#include "engine/engine.h"
#include "model/dense_kv.h"
#include "ops/thread_pool.h"

namespace ladder::engine {
namespace {

struct Run {
  double seconds = 0;
  int64_t tokens = 0;
  // The decode phase: from the moment every request has its first token to
  // the last token, and the tokens emitted in it.
  double decode_seconds = 0;
  int64_t decode_tokens = 0;
  std::vector<std::vector<int32_t>> outputs;
};

// Fills run.decode_* from each request's token times.
void measure_decode_phase(const std::vector<RequestTimings>& timings, Run& run) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point all_started = Clock::time_point::min(), last = Clock::time_point::min();
  for (const RequestTimings& t : timings) {
    if (t.token_times.empty()) return;
    all_started = std::max(all_started, t.token_times.front());
    last = std::max(last, t.token_times.back());
  }
  for (const RequestTimings& t : timings) {
    run.decode_tokens += std::count_if(t.token_times.begin(), t.token_times.end(),
                                       [&](Clock::time_point x) { return x > all_started; });
  }
  run.decode_seconds = std::chrono::duration<double>(last - all_started).count();
}

Result<Run> run_batch(Engine& engine, const std::vector<Request>& requests) {
  Run run;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Submission> subs;
  for (const Request& r : requests) {
    LADDER_ASSIGN_OR_RETURN(Submission s, engine.submit(r));
    subs.push_back(std::move(s));
  }
  std::vector<RequestTimings> timings;
  for (Submission& s : subs) {
    std::vector<int32_t> out;
    while (auto e = s.stream->next()) {
      if (e->kind == StreamEvent::Kind::kToken) out.push_back(e->token.token);
      if (e->kind == StreamEvent::Kind::kFinished && e->finish == FinishReason::kError) return e->status;
      if (e->kind == StreamEvent::Kind::kFinished) timings.push_back(e->timings);
    }
    run.tokens += static_cast<int64_t>(out.size());
    run.outputs.push_back(std::move(out));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  measure_decode_phase(timings, run);
  return run;
}

}  // namespace

Result<std::vector<SpecBenchRow>> measure_speculation(const model::LlamaModel& model, std::shared_ptr<Draft> draft,
                                                      const SpecBenchOptions& o) {
  if (o.prompts.empty()) return invalid_argument("the speculation benchmark needs at least one prompt");
  if (draft == nullptr) return invalid_argument("the speculation benchmark needs a draft (--spec)");
  const int64_t ctx = model.config().context_length;
  int max_batch = 0;
  for (int b : o.batch_sizes) {
    if (b < 1) return invalid_argument("batch sizes must be positive");
    max_batch = std::max(max_batch, b);
  }
  for (const auto& p : o.prompts) {
    if (p.empty() || static_cast<int64_t>(p.size()) + o.output_tokens > ctx) {
      return out_of_range("a prompt of " + std::to_string(p.size()) + " tokens plus " +
                          std::to_string(o.output_tokens) + " output tokens does not fit the context of " +
                          std::to_string(ctx));
    }
  }
  EngineConfig cfg;
  cfg.n_threads = o.n_threads;
  cfg.kv_dtype = o.kv_dtype;
  cfg.prefix_caching = false;  // each run computes its prompts
  cfg.scheduler.max_running = std::max(64, max_batch);
  cfg.scheduler.max_batch_tokens = std::max<int64_t>(512, static_cast<int64_t>(max_batch) * (o.k + 1));
  cfg.n_kv_blocks = static_cast<int32_t>(max_batch * ((ctx + cfg.block_size - 1) / cfg.block_size + 1));
  LADDER_ASSIGN_OR_RETURN(auto plain, Engine::create(model, cfg));
  cfg.speculative.draft = std::move(draft);
  cfg.speculative.k = o.k;
  cfg.speculative.adaptive = o.adaptive;
  LADDER_ASSIGN_OR_RETURN(auto spec, Engine::create(model, cfg));

  // One untimed request through each engine first: the weights' pages,
  // the thread pool and the draft's own weights are warm before timing.
  {
    Request warm;
    warm.prompt = o.prompts.front();
    warm.stop.max_tokens = std::min<int64_t>(o.output_tokens, 8);
    warm.sampling.temperature = 0;
    LADDER_RETURN_IF_ERROR(run_batch(*plain, {warm}).status());
    LADDER_RETURN_IF_ERROR(run_batch(*spec, {warm}).status());
  }
  std::vector<SpecBenchRow> rows;
  for (int b : o.batch_sizes) {
    std::vector<Request> requests;
    for (int i = 0; i < b; ++i) {
      Request r;
      r.prompt = o.prompts[static_cast<size_t>(i) % o.prompts.size()];
      r.sampling.temperature = o.temperature;
      r.sampling.seed = static_cast<uint64_t>(i);
      r.stop.max_tokens = o.output_tokens;
      requests.push_back(std::move(r));
    }
    const EngineMetrics before = spec->metrics();
    Run p, s;
    double spec_seconds = 0;  // all repeats
    double plain_decode = 0, spec_decode = 0;  // the fastest decode phases, tokens per second
    auto decode_rate = [](const Run& r) {
      return r.decode_seconds > 0 ? static_cast<double>(r.decode_tokens) / r.decode_seconds : 0.0;
    };
    for (int rep = 0; rep < std::max(1, o.repeats); ++rep) {
      LADDER_ASSIGN_OR_RETURN(Run pr, run_batch(*plain, requests));
      LADDER_ASSIGN_OR_RETURN(Run sr, run_batch(*spec, requests));
      spec_seconds += sr.seconds;
      plain_decode = std::max(plain_decode, decode_rate(pr));
      spec_decode = std::max(spec_decode, decode_rate(sr));
      if (rep == 0 || pr.seconds < p.seconds) p = std::move(pr);
      if (rep == 0 || sr.seconds < s.seconds) s = std::move(sr);
    }
    const EngineMetrics after = spec->metrics();
    SpecBenchRow row;
    row.batch = b;
    row.plain_tok_per_s = static_cast<double>(p.tokens) / p.seconds;
    row.spec_tok_per_s = static_cast<double>(s.tokens) / s.seconds;
    row.speedup = row.spec_tok_per_s / row.plain_tok_per_s;
    row.plain_decode_tok_per_s = plain_decode;
    row.spec_decode_tok_per_s = spec_decode;
    row.decode_speedup = plain_decode > 0 ? spec_decode / plain_decode : 0;
    const auto proposed = static_cast<double>(after.spec.proposed - before.spec.proposed);
    const auto accepted = static_cast<double>(after.spec.accepted - before.spec.accepted);
    const auto cycles = static_cast<double>(after.spec.cycles - before.spec.cycles);
    row.acceptance = proposed > 0 ? accepted / proposed : 0;
    row.tokens_per_cycle = cycles > 0 ? (accepted + cycles) / cycles : 0;
    row.draft_share = static_cast<double>(after.spec.draft_us - before.spec.draft_us) / 1e6 / spec_seconds;
    row.enabled_at_end = after.spec.enabled;
    const auto bucket = static_cast<size_t>(spec_batch_bucket(b));
    row.predicted_gain = after.spec.predicted_by_batch[bucket];
    row.measured_gain = after.spec.measured_by_batch[bucket];
    row.outputs_match = p.outputs == s.outputs;
    rows.push_back(row);
  }
  return rows;
}

Result<std::vector<VerifyCost>> measure_verify_cost(const model::LlamaModel& model, const std::vector<int32_t>& ks,
                                                    int64_t context, int repeats, int n_threads, TensorType kv_dtype) {
  const model::ModelConfig& c = model.config();
  int32_t max_k = 0;
  for (int32_t k : ks) {
    if (k < 1) return invalid_argument("k must be >= 1");
    max_k = std::max(max_k, k);
  }
  if (context < 1 || context + max_k + 1 > c.context_length) {
    return out_of_range("a context of " + std::to_string(context) + " plus " + std::to_string(max_k + 1) +
                        " verified positions does not fit the model's " + std::to_string(c.context_length));
  }
  if (repeats < 1) return invalid_argument("repeats must be >= 1");
  model::DenseKv kv(c, 1, context + max_k + 1, 16, kv_dtype);
  ops::ThreadPool pool(n_threads);
  std::vector<int32_t> tokens(static_cast<size_t>(context + max_k + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1 + i % static_cast<size_t>(c.n_vocab - 1));
  std::vector<float> logits(static_cast<size_t>((max_k + 1) * c.n_vocab));
  // Positions [0, context) once; every timed pass writes the positions after them.
  auto pass = [&](int64_t start, int64_t n, model::BatchSequence::Logits which) -> Result<double> {
    model::BatchSequence seq;
    seq.tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(start), static_cast<size_t>(n));
    seq.start_pos = start;
    seq.block_table = kv.block_table(0);
    seq.logits = which;
    const auto t0 = std::chrono::steady_clock::now();
    LADDER_RETURN_IF_ERROR(model.forward(std::span(&seq, 1), kv.buffers(), logits, pool));
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  LADDER_RETURN_IF_ERROR(pass(0, context, model::BatchSequence::Logits::kNone).status());
  auto fastest = [&](int64_t n) -> Result<double> {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
      LADDER_ASSIGN_OR_RETURN(double us, pass(context, n, model::BatchSequence::Logits::kAll));
      best = std::min(best, us);
    }
    return best;
  };
  LADDER_RETURN_IF_ERROR(fastest(1).status());  // warm
  std::vector<VerifyCost> out;
  for (int32_t k : ks) {
    // Interleaved, so that a slow stretch of the machine hits both.
    VerifyCost v;
    v.k = k;
    LADDER_ASSIGN_OR_RETURN(v.step_us, fastest(1));
    LADDER_ASSIGN_OR_RETURN(v.verify_us, fastest(k + 1));
    LADDER_ASSIGN_OR_RETURN(double again, fastest(1));
    v.step_us = std::min(v.step_us, again);
    v.ratio = v.verify_us / v.step_us;
    out.push_back(v);
  }
  return out;
}

}  // namespace ladder::engine
