#include "perf/model_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/check.h"
#include "model/dense_kv.h"

namespace ladder::perf {

using model::BatchSequence;
using model::DenseKv;
using model::LlamaModel;
using model::ModelConfig;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int32_t> filler_tokens(const ModelConfig& c, int64_t n, int32_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + salt * 104729 + 3) % c.n_vocab);
  return ids;
}

}  // namespace

double flops_per_token(const ModelConfig& c, int64_t pos) {
  const double d = static_cast<double>(c.dim);
  const double matmul = 2.0 * static_cast<double>(c.n_layers) *
                            (d * static_cast<double>(c.q_dim()) * 2 + d * static_cast<double>(c.kv_dim()) * 2 +
                             3.0 * d * static_cast<double>(c.ffn_dim)) +
                        2.0 * d * static_cast<double>(c.n_vocab);
  // Scores and the weighted sum of values over pos + 1 keys, every head.
  const double attention =
      4.0 * static_cast<double>(c.n_layers) * static_cast<double>(c.q_dim()) * static_cast<double>(pos + 1);
  return matmul + attention;
}

ForwardMeasurement measure_decode(const LlamaModel& model, int batch, int64_t context, int steps,
                                  TensorType kv_dtype, ops::ThreadPool& pool) {
  const ModelConfig& c = model.config();
  LADDER_CHECK(batch > 0 && steps > 0 && context >= 1 && context + steps <= c.context_length,
               "decode benchmark does not fit the context");
  DenseKv kv(c, batch, context + steps, 16, kv_dtype);
  std::vector<BatchSequence> seqs(static_cast<size_t>(batch));
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch));
  std::vector<float> logits(static_cast<size_t>(batch * c.n_vocab));
  // Fill the KV with `context` tokens per sequence (not timed).
  for (int b = 0; b < batch; ++b) {
    prompts[static_cast<size_t>(b)] = filler_tokens(c, context, b);
    auto& s = seqs[static_cast<size_t>(b)];
    s.tokens = prompts[static_cast<size_t>(b)];
    s.start_pos = 0;
    s.block_table = kv.block_table(b);
  }
  LADDER_CHECK(model.forward(seqs, kv.buffers(), logits, pool).is_ok(), "decode benchmark prefill failed");
  std::vector<int32_t> next(static_cast<size_t>(batch), 5);
  double flops = 0;
  const auto t0 = Clock::now();
  for (int step = 0; step < steps; ++step) {
    for (int b = 0; b < batch; ++b) {
      auto& s = seqs[static_cast<size_t>(b)];
      s.tokens = std::span<const int32_t>(&next[static_cast<size_t>(b)], 1);
      s.start_pos = context + step;
      flops += flops_per_token(c, s.start_pos);
    }
    LADDER_CHECK(model.forward(seqs, kv.buffers(), logits, pool).is_ok(), "decode benchmark step failed");
  }
  ForwardMeasurement m;
  m.seconds = seconds_since(t0);
  m.tokens = static_cast<int64_t>(batch) * steps;
  m.tokens_per_s = static_cast<double>(m.tokens) / m.seconds;
  m.weight_gb_per_s = static_cast<double>(model.weight_bytes()) * steps / m.seconds / 1e9;
  m.gflop_per_s = flops / m.seconds / 1e9;
  return m;
}

ForwardMeasurement measure_prefill(const LlamaModel& model, int64_t prompt_tokens, int repeats,
                                   TensorType kv_dtype, ops::ThreadPool& pool, std::vector<float>* logits_out) {
  const ModelConfig& c = model.config();
  LADDER_CHECK(prompt_tokens >= 1 && prompt_tokens <= c.context_length && repeats >= 1,
               "prefill benchmark does not fit the context");
  DenseKv kv(c, 1, prompt_tokens, 16, kv_dtype);
  const auto prompt = filler_tokens(c, prompt_tokens, 1);
  BatchSequence s;
  s.tokens = prompt;
  s.block_table = kv.block_table(0);
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));
  double flops = 0;
  for (int64_t p = 0; p < prompt_tokens; ++p) flops += flops_per_token(c, p);
  // The output head runs for the last token only.
  flops -= static_cast<double>(prompt_tokens - 1) * 2.0 * static_cast<double>(c.dim) * static_cast<double>(c.n_vocab);
  ForwardMeasurement m;
  m.seconds = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    LADDER_CHECK(model.forward({&s, 1}, kv.buffers(), logits, pool).is_ok(), "prefill benchmark failed");
    m.seconds = std::min(m.seconds, seconds_since(t0));
  }
  if (logits_out != nullptr) *logits_out = logits;
  m.tokens = prompt_tokens;
  m.tokens_per_s = static_cast<double>(prompt_tokens) / m.seconds;
  m.weight_gb_per_s = static_cast<double>(model.weight_bytes()) / m.seconds / 1e9;
  m.gflop_per_s = flops / m.seconds / 1e9;
  return m;
}

}  // namespace ladder::perf
