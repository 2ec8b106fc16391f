// Every architecture `ladder synth --arch` writes (llama, mistral, qwen2,
// qwen3, phi3):
// a synthetic F32 model of each loads under its own name, and its
// log-probabilities over the whole vocabulary after each of 10 tokens match
// the independent float64 reference (llama_reference.py, numpy, sharing no
// code with the engine), which applies qwen2's Q/K/V biases, qwen3's
// per-head Q/K norms, phi3's fused projections and their NeoX-style RoPE
// itself. A sliding window shorter than the context caps the context. A qwen2 model without its biases is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <fstream>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/synth.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

model::SynthOptions small(const std::string& arch) {
  model::SynthOptions o;
  o.arch = arch;
  o.dim = 64, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 128, o.n_vocab = 512;
  o.context_length = 128;
  o.init_std = 0.08f;  // logits spread enough that a wrong detail shows
  o.seed = 11;
  return o;
}

class Architectures : public ::testing::TestWithParam<std::string> {};

TEST_P(Architectures, LoadsUnderItsNameAndMatchesTheFloat64Reference) {
  const std::string arch = GetParam();
  const std::string path = temp_dir() + "/arch_" + arch + ".gguf";
  const Status written = model::write_synthetic_model(small(arch), path);
  ASSERT_TRUE(written.is_ok()) << written.message();
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().arch, arch);

  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> dist(3, 511);
  std::vector<int32_t> seq = {1};
  while (seq.size() < 10) seq.push_back(dist(rng));
  const auto ref = reference_logprobs(path, seq);
  ops::ThreadPool pool(2);
  const double worst = max_abs_difference(model_logprobs(*m.model, seq, pool), ref);
  double spread = 0;  // how far the reference is from uniform anywhere
  for (const auto& lp : ref) {
    for (double r : lp) spread = std::max(spread, std::abs(r + std::log(static_cast<double>(lp.size()))));
  }
  std::printf("%s: max |logprob - float64 reference| %.2e (log-probabilities spread up to %.2f from uniform)\n",
              arch.c_str(), worst, spread);
  EXPECT_LT(worst, 2e-4);
  EXPECT_GT(spread, 0.05) << "the model is too flat for the comparison to mean anything";
}

INSTANTIATE_TEST_SUITE_P(Synth, Architectures, ::testing::Values("llama", "mistral", "qwen2", "qwen3", "phi3"),
                         [](const auto& p) { return p.param; });

TEST(Architectures, AQwen2ModelWithoutItsBiasesIsRefused) {
  // A llama file relabelled qwen2 has no attn_q.bias.
  model::SynthOptions o = small("llama");
  const std::string llama = temp_dir() + "/relabel_llama.gguf";
  const Status written = model::write_synthetic_model(o, llama);
  ASSERT_TRUE(written.is_ok()) << written.message();
  std::string bytes = read_file(llama);
  // "llama" is 5 bytes and "qwen2" too: relabel general.architecture and the
  // llama.* keys in place, so the file stays well formed.
  for (size_t at = bytes.find("llama"); at != std::string::npos; at = bytes.find("llama", at + 5)) {
    bytes.replace(at, 5, "qwen2");
  }
  const std::string qwen = temp_dir() + "/relabel_qwen2.gguf";
  {
    std::ofstream out(qwen, std::ios::binary);
    out << bytes;
  }
  auto file = gguf::GgufFile::open(qwen);
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto m = model::LlamaModel::load(*file);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("attn_q.bias"), std::string::npos) << m.status().message();
}

// phi3's Q, K, V (and gate, up) are row ranges of one matrix: in a quantized
// file a range starts at its first row's bytes, not at an F32 offset. The
// same random weights in F32 (checked against the reference above) and Q8_0
// agree to Q8_0's rounding; a range misplaced in the quantized bytes would not.
TEST(Architectures, FusedProjectionsOfAQuantizedFileAreTheRightRows) {
  model::SynthOptions o = small("phi3");
  const std::string f32 = temp_dir() + "/phi3_f32.gguf", q8 = temp_dir() + "/phi3_q8.gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, f32).is_ok());
  o.dtype = TensorType::kQ8_0;
  ASSERT_TRUE(model::write_synthetic_model(o, q8).is_ok());
  auto a = load_model(f32);
  auto b = load_model(q8);
  ASSERT_TRUE(a.model && b.model);
  const std::vector<int32_t> seq = {1, 40, 300, 7, 99, 12, 480, 256};
  ops::ThreadPool pool(2);
  const double diff = max_abs_difference(model_logprobs(*a.model, seq, pool), model_logprobs(*b.model, seq, pool));
  std::printf("phi3 F32 vs Q8_0: max |logprob difference| %.3g\n", diff);
  EXPECT_LT(diff, 0.15);  // unfused llama at these weights: 0.07
}

TEST(Architectures, ASlidingWindowShorterThanTheContextCapsTheContext) {
  model::SynthOptions o = small("phi3");
  o.sliding_window = 48;
  const std::string path = temp_dir() + "/phi3_window.gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, path).is_ok());
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().sliding_window, 48);
  EXPECT_EQ(m.model->config().context_length, 48);
  o.sliding_window = 4096;  // longer than the context: nothing to cap
  const std::string wide = temp_dir() + "/phi3_wide_window.gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, wide).is_ok());
  m = load_model(wide);
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().sliding_window, 0);
  EXPECT_EQ(m.model->config().context_length, 128);
}

// The same file with phi3's LongRoPE factors added: refused at load, naming them.
TEST(Architectures, LongRopeFactorsAreRefusedNamingThem) {
  const std::string path = temp_dir() + "/phi3_plain.gguf";
  ASSERT_TRUE(model::write_synthetic_model(small("phi3"), path).is_ok());
  auto plain = gguf::GgufFile::open(path);
  ASSERT_TRUE(plain.is_ok());
  gguf::GgufWriter w;
  for (const auto& [key, value] : plain->metadata()) w.set(key, value);
  for (const auto& t : plain->tensors()) {
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)).is_ok());
  }
  const std::vector<float> factors(8, 1.0f);  // rope dims 16: 8 pairs
  std::vector<uint8_t> bytes(factors.size() * sizeof(float));
  std::memcpy(bytes.data(), factors.data(), bytes.size());
  ASSERT_TRUE(w.add_tensor("rope_factors_long.weight", TensorType::kF32, {factors.size()}, bytes).is_ok());
  const std::string longrope = temp_dir() + "/phi3_longrope.gguf";
  ASSERT_TRUE(w.write(longrope).is_ok());
  auto file = gguf::GgufFile::open(longrope);
  ASSERT_TRUE(file.is_ok());
  auto m = model::LlamaModel::load(*file);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("rope_factors_long.weight"), std::string::npos) << m.status().message();
}

TEST(Architectures, SynthRefusesWhatItCannotWrite) {
  model::SynthOptions o = small("gemma3");
  auto st = model::write_synthetic_model(o, temp_dir() + "/x.gguf");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("gemma3"), std::string::npos) << st.message();
  auto r = model::synth_preset("retrieval");
  ASSERT_TRUE(r.is_ok());
  r->arch = "qwen2";
  st = model::write_synthetic_model(*r, temp_dir() + "/y.gguf");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--arch llama"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ladder::testing
