#include "server/prompt_scorer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/dense_kv.h"
#include "ops/thread_pool.h"

namespace ladder::server {

namespace {

// Positions evaluated per forward pass: bounds the logits buffer.
constexpr int64_t kChunk = 128;

// The score of `token` under one row of logits.
PromptTokenScore score_row(std::span<const float> row, int32_t token, int32_t top, std::vector<int32_t>& order) {
  double max = -INFINITY;
  for (float x : row) max = std::max(max, static_cast<double>(x));
  double sum = 0.0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  const double log_z = max + std::log(sum);
  PromptTokenScore s;
  s.token = token;
  s.scored = true;
  const float x = row[static_cast<size_t>(token)];
  s.logprob = static_cast<float>(static_cast<double>(x) - log_z);
  s.rank = 1;
  for (size_t i = 0; i < row.size(); ++i) {
    // Ties rank by id, as the top list orders them.
    if (row[i] > x || (row[i] == x && static_cast<int32_t>(i) < token)) ++s.rank;
  }
  if (top > 0) {
    const size_t n = std::min(static_cast<size_t>(top), row.size());
    order.resize(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&](int32_t a, int32_t b) {
                        const float xa = row[static_cast<size_t>(a)], xb = row[static_cast<size_t>(b)];
                        return xa != xb ? xa > xb : a < b;
                      });
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = order[i];
      s.top.push_back({id, static_cast<float>(static_cast<double>(row[static_cast<size_t>(id)]) - log_z)});
    }
  }
  return s;
}

}  // namespace

PromptScorer::PromptScorer(const model::LlamaModel& model) : model_(model) {}

Result<std::vector<PromptTokenScore>> PromptScorer::score(std::span<const int32_t> tokens, int32_t top) const {
  const model::ModelConfig& c = model_.config();
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return invalid_argument("the prompt is empty");
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.n_vocab) return invalid_argument("a prompt token is outside the vocabulary");
  }
  std::vector<PromptTokenScore> out(static_cast<size_t>(n));
  out[0].token = tokens[0];
  model::DenseKv kv(c, 1, n);
  ops::ThreadPool pool(1);
  std::vector<float> logits(static_cast<size_t>(std::min(kChunk, n) * c.n_vocab));
  std::vector<int32_t> order;
  // Row r of the pass over [from, from + len) predicts token from + r + 1.
  for (int64_t from = 0; from + 1 < n; from += kChunk) {
    const int64_t len = std::min(kChunk, n - 1 - from);
    model::BatchSequence seq;
    seq.tokens = tokens.subspan(static_cast<size_t>(from), static_cast<size_t>(len));
    seq.start_pos = from;
    seq.block_table = kv.block_table(0);
    seq.logits = model::BatchSequence::Logits::kAll;
    LADDER_RETURN_IF_ERROR(model_.forward(std::span(&seq, 1), kv.buffers(),
                                          std::span(logits).first(static_cast<size_t>(len * c.n_vocab)), pool));
    for (int64_t r = 0; r < len; ++r) {
      const auto row = std::span<const float>(logits).subspan(static_cast<size_t>(r * c.n_vocab),
                                                              static_cast<size_t>(c.n_vocab));
      const int64_t at = from + r + 1;
      out[static_cast<size_t>(at)] = score_row(row, tokens[static_cast<size_t>(at)], top, order);
    }
  }
  return out;
}

}  // namespace ladder::server
