// DESIGN.md invariant 1: a sequence's logits are bit-identical alone, inside a
// ragged batch of other sequences, and with its prompt fed in chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model/synth.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

std::vector<int32_t> random_ids(int n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(3, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> ids = {1};
  while (static_cast<int>(ids.size()) < n) ids.push_back(dist(rng));
  return ids;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Logits of sequence 0 (all positions) when it runs with 7 others of
// different lengths in one ragged batch.
std::vector<float> batched_logits(const model::LlamaModel& m, const std::vector<int32_t>& target,
                                  ops::ThreadPool& pool) {
  const int64_t n_vocab = m.config().n_vocab;
  std::vector<std::vector<int32_t>> seqs = {target};
  for (int i = 1; i < 8; ++i) seqs.push_back(random_ids(3 + 13 * i, n_vocab, 100 + static_cast<uint32_t>(i)));
  model::DenseKv kv(m.config(), 8, 200);
  std::vector<model::BatchSequence> batch(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    batch[i].tokens = seqs[i];
    batch[i].start_pos = 0;
    batch[i].block_table = kv.block_table(static_cast<int>(i));
    batch[i].logits = i == 0 ? model::BatchSequence::Logits::kAll : model::BatchSequence::Logits::kLast;
  }
  std::vector<float> logits(static_cast<size_t>(model::LlamaModel::logit_rows(batch) * n_vocab));
  Status st = m.forward(batch, kv.buffers(), logits, pool);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  logits.resize(target.size() * static_cast<size_t>(n_vocab));  // sequence 0's rows come first
  return logits;
}

void check_invariance(const model::LlamaModel& m) {
  const int64_t n_vocab = m.config().n_vocab;
  const auto prompt = random_ids(120, n_vocab, 7);
  const size_t n = prompt.size() * static_cast<size_t>(n_vocab);
  for (int threads : {1, 2, 3}) {
    ops::ThreadPool pool(threads);
    ops::ThreadPool single(1);
    const auto alone = prompt_logits(m, prompt, 0, single);
    for (int64_t chunk : {1, 7, 64}) {
      const auto chunked = prompt_logits(m, prompt, chunk, pool);
      EXPECT_TRUE(same_bits(alone.data(), chunked.data(), n)) << "chunk " << chunk << " threads " << threads;
    }
    const auto batched = batched_logits(m, prompt, pool);
    EXPECT_TRUE(same_bits(alone.data(), batched.data(), n)) << "ragged batch, threads " << threads;
  }
}

TEST(BatchInvariance, Stories260K) {
  auto m = load_model(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.model);
  check_invariance(*m.model);
}

// Other architectures: qwen2's biases, qwen3's per-head norms, phi3's fused
// projections (Q8_0 rows bound inside one matrix), their NeoX-style RoPE, and
// sliding windows (gemma2's on every other layer with its soft caps, mistral's
// on all) shorter than the prompt, which chunks of 7 and 64 cross, keep it.
struct InvarianceCase {
  std::string arch;
  int64_t window = 0;
  std::string name() const { return arch + (window ? "_window" + std::to_string(window) : ""); }
};

void PrintTo(const InvarianceCase& c, std::ostream* os) { *os << c.name(); }

class ArchitectureInvariance : public ::testing::TestWithParam<InvarianceCase> {};

TEST_P(ArchitectureInvariance, Synthetic) {
  model::SynthOptions o;
  o.arch = GetParam().arch;
  o.sliding_window = GetParam().window;
  o.dim = 256, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 512, o.n_vocab = 600;
  o.dtype = TensorType::kQ8_0;
  o.seed = 4;
  const std::string path = temp_dir() + "/inv_" + GetParam().name() + ".gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, path).is_ok());
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().arch, o.arch);
  check_invariance(*m.model);
}

INSTANTIATE_TEST_SUITE_P(Synth, ArchitectureInvariance,
                         ::testing::Values(InvarianceCase{"qwen2"}, InvarianceCase{"qwen3"}, InvarianceCase{"phi3"},
                                           InvarianceCase{"gemma2", 24}, InvarianceCase{"mistral", 40}),
                         [](const auto& p) { return p.param.name(); });

class SyntheticInvariance : public ::testing::TestWithParam<TensorType> {};

TEST_P(SyntheticInvariance, EveryWeightType) {
  model::SynthOptions o;
  o.dim = 256, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 512, o.n_vocab = 600;
  o.dtype = GetParam();
  o.seed = 3;
  const std::string path = temp_dir() + "/inv_" + std::string(tensor_type_name(o.dtype)) + ".gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, path).is_ok());
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  check_invariance(*m.model);
}

INSTANTIATE_TEST_SUITE_P(Types, SyntheticInvariance,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                                           TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ6_K),
                         [](const auto& p) { return std::string(tensor_type_name(p.param)); });

}  // namespace
}  // namespace ladder::testing
