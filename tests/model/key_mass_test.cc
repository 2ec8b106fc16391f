// The attention each block's keys receive (model::BatchSequence::key_mass,
// snap eviction's evidence) through the real stories260K forward pass: every
// token gives each head of each layer one unit of softmax weight, asking for
// it changes no logit, and a buffer too short for the batch is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

TEST(KeyMass, SumsToOnePerTokenHeadAndLayerAndChangesNoLogit) {
  auto m = load_model(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.model);
  const model::ModelConfig& c = m.model->config();
  std::vector<int32_t> tokens = kStoriesPrompt;
  tokens.insert(tokens.end(), kStoriesGolden64.begin(),
                kStoriesGolden64.begin() + 35);  // 40 tokens, 3 blocks
  ops::ThreadPool pool(2);
  auto forward = [&](std::span<float> key_mass, std::vector<float>& logits) {
    model::DenseKv kv(c, 1, 48);
    model::BatchSequence s;
    s.tokens = tokens;
    s.block_table = kv.block_table(0);
    s.key_mass = key_mass;
    logits.assign(static_cast<size_t>(c.n_vocab), 0.0f);
    return m.model->forward({&s, 1}, kv.buffers(), logits, pool);
  };
  std::vector<float> plain, with_mass;
  ASSERT_TRUE(forward({}, plain).is_ok());
  std::vector<float> mass(3, 0.0f);
  ASSERT_TRUE(forward(mass, with_mass).is_ok());
  EXPECT_EQ(std::memcmp(plain.data(), with_mass.data(), plain.size() * sizeof(float)), 0);
  const double want = 40.0 * static_cast<double>(c.n_heads * c.n_layers);
  EXPECT_NEAR(std::accumulate(mass.begin(), mass.end(), 0.0), want, want * 1e-5);
  for (float x : mass) EXPECT_GT(x, 0.0f);
  // Causal: block 0's keys are seen by all 40 tokens, block 2's by the last 8
  // only, so block 0 gets more than one token's share of the whole.
  EXPECT_GT(mass[0], want / 40.0);

  std::vector<float> short_mass(2, 0.0f);
  const Status st = forward(short_mass, with_mass);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("key mass"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ladder::testing
