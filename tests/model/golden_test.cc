// The F32 forward pass against golden outputs of an independent reference
// implementation on a real trained model (../shared/models/README.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

const std::vector<int32_t>& kPrompt = kStoriesPrompt;
const std::vector<int32_t>& kGolden = kStoriesGolden64;

TEST(Golden, Stories260KGreedyIdsMatchReference) {
  auto m = load_model(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.model);
  const auto& c = m.model->config();
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.n_vocab, 512);
  for (int threads : {1, 2}) {
    ops::ThreadPool pool(threads);
    EXPECT_EQ(greedy(*m.model, kPrompt, 64, pool), kGolden) << "threads=" << threads;
  }
}

TEST(Golden, Stories260KTop5LogprobsMatchReference) {
  auto m = load_model(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.model);
  auto ref = nlohmann::json::parse(read_file(shared_path("models/stories260K.top5.json")));
  ops::ThreadPool pool(2);
  // Teacher-forced: prompt + golden ids, logits after each of the first steps.
  std::vector<int32_t> seq = kPrompt;
  seq.insert(seq.end(), kGolden.begin(), kGolden.end());
  auto logits = prompt_logits(*m.model, seq, 0, pool);
  const int64_t n_vocab = m.model->config().n_vocab;
  const auto& steps = ref.at("greedy_steps");
  ASSERT_GE(steps.size(), 8u);
  int checked = 0;
  for (size_t s = 0; s < 8; ++s) {
    const float* row = logits.data() + (kPrompt.size() - 1 + s) * static_cast<size_t>(n_vocab);
    double mx = row[0];
    for (int64_t i = 1; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(row[i]));
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(row[i] - mx);
    const double lse = mx + std::log(sum);
    EXPECT_EQ(steps[s].at("chosen").get<int>(), kGolden[s]);
    for (const auto& e : steps[s].at("top5_logprobs")) {
      const int id = e[0].get<int>();
      const double lp = e[1].get<double>();
      // The published reference differs from an exact float64 evaluation by up
      // to ~5e-3 (it carries lower-precision intermediates); the exact check
      // is Golden.MatchesFloat64Reference below.
      EXPECT_NEAR(row[id] - lse, lp, 1e-2) << "step " << s << " token " << id;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 40);
}

// Every log-probability of the full vocabulary after each of 12 teacher-forced
// tokens, against an independent float64 implementation (numpy, in
// tests/model/llama_reference.py) that shares no code with the engine.
TEST(Golden, MatchesFloat64Reference) {
  const std::string model_path = shared_path("models/stories260K.gguf");
  auto m = load_model(model_path);
  ASSERT_TRUE(m.model);
  std::vector<int32_t> seq = kPrompt;
  seq.insert(seq.end(), kGolden.begin(), kGolden.begin() + 7);
  const auto ref = reference_logprobs(model_path, seq);
  ops::ThreadPool pool(2);
  const double worst = max_abs_difference(model_logprobs(*m.model, seq, pool), ref);
  const int64_t n_vocab = m.model->config().n_vocab;
  std::printf("max |logprob - float64 reference| over %zu positions x %lld tokens: %.2e\n", seq.size(),
              static_cast<long long>(n_vocab), worst);
  EXPECT_LT(worst, 2e-4);
}

}  // namespace
}  // namespace ladder::testing
