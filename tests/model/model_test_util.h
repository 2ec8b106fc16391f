// Helpers for model tests: load a GGUF model, run greedy decoding or collect
// logits through DenseKv, one sequence at a time or as a ragged batch.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/dense_kv.h"
#include "model/llama_model.h"
#include "ops/thread_pool.h"
#include "test_support.h"

namespace ladder::testing {

struct LoadedModel {
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<model::LlamaModel> model;
};

inline LoadedModel load_model(const std::string& path) {
  LoadedModel m;
  auto file = gguf::GgufFile::open(path);
  EXPECT_TRUE(file.is_ok()) << file.status().to_string();
  if (!file.is_ok()) return m;
  m.file = std::make_unique<gguf::GgufFile>(std::move(file).value());
  auto model = model::LlamaModel::load(*m.file);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (model.is_ok()) m.model = std::move(model).value();
  return m;
}

inline int32_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// Runs `prompt` through the model in chunks of `chunk` tokens (0: one pass)
// and returns the logits after every token ([prompt.size()][n_vocab]).
inline std::vector<float> prompt_logits(const model::LlamaModel& m, const std::vector<int32_t>& prompt,
                                        int64_t chunk, ops::ThreadPool& pool) {
  const int64_t n_vocab = m.config().n_vocab;
  model::DenseKv kv(m.config(), 1, static_cast<int64_t>(prompt.size()) + 1);
  std::vector<float> out(prompt.size() * static_cast<size_t>(n_vocab));
  if (chunk <= 0) chunk = static_cast<int64_t>(prompt.size());
  for (size_t start = 0; start < prompt.size(); start += static_cast<size_t>(chunk)) {
    const size_t n = std::min(prompt.size() - start, static_cast<size_t>(chunk));
    model::BatchSequence seq;
    seq.tokens = std::span<const int32_t>(prompt.data() + start, n);
    seq.start_pos = static_cast<int64_t>(start);
    seq.block_table = kv.block_table(0);
    seq.logits = model::BatchSequence::Logits::kAll;
    Status st = m.forward({&seq, 1}, kv.buffers(),
                          std::span<float>(out.data() + start * static_cast<size_t>(n_vocab), n * n_vocab), pool);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return out;
}

// Log-probabilities over the vocabulary after each token of `seq`
// ([seq.size()][n_vocab]): the model's, one pass, log-softmax in double.
inline std::vector<std::vector<double>> model_logprobs(const model::LlamaModel& m, const std::vector<int32_t>& seq,
                                                       ops::ThreadPool& pool) {
  const auto logits = prompt_logits(m, seq, 0, pool);
  const auto n_vocab = static_cast<size_t>(m.config().n_vocab);
  std::vector<std::vector<double>> out;
  for (size_t t = 0; t < seq.size(); ++t) {
    const float* row = logits.data() + t * n_vocab;
    const double mx = *std::max_element(row, row + n_vocab);
    double sum = 0;
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(row[i] - mx);
    const double lse = mx + std::log(sum);
    std::vector<double> lp(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) lp[i] = row[i] - lse;
    out.push_back(std::move(lp));
  }
  return out;
}

// The same from the independent float64 implementation
// (tests/model/llama_reference.py, numpy); empty, and the test failed, when it
// could not run.
inline std::vector<std::vector<double>> reference_logprobs(const std::string& model_path,
                                                           const std::vector<int32_t>& seq,
                                                           int64_t serving_context = 0) {
  std::vector<std::string> argv = {"/usr/bin/python3",
                                   std::string(LADDER_TEST_SOURCE_DIR) + "/model/llama_reference.py"};
  if (serving_context > 0) argv.push_back("--context=" + std::to_string(serving_context));
  argv.push_back(model_path);
  for (int32_t t : seq) argv.push_back(std::to_string(t));
  const CommandResult run = run_command(argv);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code != 0) return {};
  auto ref = nlohmann::json::parse(run.out).get<std::vector<std::vector<double>>>();
  EXPECT_EQ(ref.size(), seq.size());
  return ref;
}

// The largest |a - b| over every position and token (infinity when the shapes differ).
inline double max_abs_difference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != b[t].size()) return INFINITY;
    for (size_t i = 0; i < a[t].size(); ++i) worst = std::max(worst, std::abs(a[t][i] - b[t][i]));
  }
  return worst;
}

// ln softmax(x), in double.
inline std::vector<double> log_softmax(const float* x, int64_t n) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] - lse;
  return out;
}

// Greedy continuation of `prompt` for n tokens, one sequence alone.
inline std::vector<int32_t> greedy(const model::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                   ops::ThreadPool& pool) {
  const int64_t n_vocab = m.config().n_vocab;
  model::DenseKv kv(m.config(), 1, static_cast<int64_t>(prompt.size()) + n + 1);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<int32_t> out;
  std::vector<int32_t> feed = prompt;
  int64_t pos = 0;
  for (int i = 0; i < n; ++i) {
    model::BatchSequence seq;
    seq.tokens = feed;
    seq.start_pos = pos;
    seq.block_table = kv.block_table(0);
    Status st = m.forward({&seq, 1}, kv.buffers(), logits, pool);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st.is_ok()) break;
    pos += static_cast<int64_t>(feed.size());
    const int32_t next = argmax(logits.data(), n_vocab);
    out.push_back(next);
    feed = {next};
  }
  return out;
}

}  // namespace ladder::testing
