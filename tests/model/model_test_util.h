// Helpers for model tests: load a GGUF model, run greedy decoding or collect
// logits through DenseKv, one sequence at a time or as a ragged batch.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/dense_kv.h"
#include "model/llama_model.h"
#include "ops/thread_pool.h"

namespace ladder::testing {

// stories260K: "Once upon a time" with BOS, and the first 64 greedy ids after
// it from an independent reference (../shared/models/README.md).
inline const std::vector<int32_t> kStoriesPrompt = {1, 403, 407, 261, 378};
inline const std::vector<int32_t> kStoriesGolden64 = {
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
    265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267,
    337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

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
