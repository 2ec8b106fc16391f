// Every architecture `ladder synth --arch` writes (llama, mistral, qwen2,
// qwen3, phi3, gemma2, gemma3), each also with a sliding window of 4
// positions (shorter than the 10 tokens run): a synthetic F32 model of each
// loads under its own name, and its log-probabilities over the whole
// vocabulary after each token match the independent float64 reference
// (llama_reference.py, numpy, sharing no code with the engine), which applies
// qwen2's Q/K/V biases, qwen3's per-head Q/K norms, phi3's fused projections,
// gemma's scaled embedding, post norms, GELU, soft caps and alternating
// sliding layers (gemma3's with their own RoPE base), the windows and the
// NeoX-style RoPE itself. A qwen2 model without its biases is refused.
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

struct ArchCase {
  std::string arch;
  int64_t window = 0;  // attention.sliding_window; 0: not written
  int64_t layers = 2;
  int64_t long_rope = 0;  // phi3 LongRoPE's original context; 0: not written
  std::string name() const {
    return arch + (window ? "_window" + std::to_string(window) : "") +
           (long_rope ? "_longrope" + std::to_string(long_rope) : "");
  }
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.name(); }

class Architectures : public ::testing::TestWithParam<ArchCase> {};

TEST_P(Architectures, LoadsUnderItsNameAndMatchesTheFloat64Reference) {
  const ArchCase& c = GetParam();
  const std::string arch = c.arch;
  const std::string path = temp_dir() + "/arch_" + c.name() + ".gguf";
  model::SynthOptions o = small(arch);
  o.sliding_window = c.window;
  o.n_layers = c.layers;
  o.long_rope_original_context = c.long_rope;
  const Status written = model::write_synthetic_model(o, path);
  ASSERT_TRUE(written.is_ok()) << written.message();
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().arch, arch);
  if (c.window) {
    EXPECT_EQ(m.model->config().sliding_window, c.window);
    EXPECT_EQ(m.model->config().context_length, 128) << "a window no longer caps the context";
  }

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
              c.name().c_str(), worst, spread);
  EXPECT_LT(worst, 2e-4);
  EXPECT_GT(spread, 0.05) << "the model is too flat for the comparison to mean anything";
}

// gemma3's layers slide 5 of 6: 7 layers include a global one (layer 5).
INSTANTIATE_TEST_SUITE_P(Synth, Architectures,
                         ::testing::Values(ArchCase{"llama"}, ArchCase{"mistral"}, ArchCase{"qwen2"},
                                           ArchCase{"qwen3"}, ArchCase{"phi3"}, ArchCase{"gemma2"},
                                           ArchCase{"gemma3"}, ArchCase{"mistral", 4}, ArchCase{"phi3", 4},
                                           ArchCase{"gemma2", 4}, ArchCase{"gemma3", 4, 7},
                                           ArchCase{"phi3", 0, 2, 32}),
                         [](const auto& p) { return p.param.name(); });

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

// The window is the model's, not a cap on its context: a query past it sees
// fewer keys than one without it, so the two files' logits part exactly
// where the sequence outgrows the window (and not before).
TEST(Architectures, ASlidingWindowChangesLogitsOnlyPastTheWindow) {
  model::SynthOptions o = small("mistral");
  const std::string full = temp_dir() + "/mistral_full.gguf", slid = temp_dir() + "/mistral_window6.gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, full).is_ok());
  o.sliding_window = 6;
  ASSERT_TRUE(model::write_synthetic_model(o, slid).is_ok());
  auto a = load_model(full);
  auto b = load_model(slid);
  ASSERT_TRUE(a.model && b.model);
  EXPECT_EQ(b.model->config().sliding_window, 6);
  EXPECT_EQ(b.model->config().context_length, 128);
  const std::vector<int32_t> seq = {1, 40, 300, 7, 99, 12, 480, 256, 33, 71};
  ops::ThreadPool pool(2);
  const auto la = model_logprobs(*a.model, seq, pool), lb = model_logprobs(*b.model, seq, pool);
  for (size_t t = 0; t < seq.size(); ++t) {
    const double d = max_abs_difference({la[t]}, {lb[t]});
    if (t < 6) {
      EXPECT_EQ(d, 0.0) << "position " << t << " is inside the window";
    } else {
      EXPECT_GT(d, 1e-3) << "position " << t << " sees " << t + 1 << " tokens, the window 6";
    }
  }
}

// A copy of the GGUF at `path` with its metadata and tensors in a writer,
// for a test to change before writing it out.
void copy_into(const std::string& path, gguf::GgufWriter& w) {
  auto file = gguf::GgufFile::open(path);
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  for (const auto& [key, value] : file->metadata()) w.set(key, value);
  for (const auto& t : file->tensors()) {
    ASSERT_TRUE(w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)).is_ok());
  }
}

// gemma2's caps as written (50, 30) barely bend this small model's scores;
// caps of 0.3 and 1.5 dominate them, and the model still matches the
// reference, which reads the caps from the file too. Without the caps the
// logits move by far more than the tolerance.
TEST(Architectures, Gemma2SoftCapsFromTheFileAreApplied) {
  const std::string plain = temp_dir() + "/gemma2_caps_plain.gguf", capped = temp_dir() + "/gemma2_caps.gguf";
  model::SynthOptions o = small("gemma2");
  o.init_std = 0.3f;
  ASSERT_TRUE(model::write_synthetic_model(o, plain).is_ok());
  gguf::GgufWriter w;
  copy_into(plain, w);
  w.set_f32("gemma2.attn_logit_softcapping", 0.3f);
  w.set_f32("gemma2.final_logit_softcapping", 1.5f);
  ASSERT_TRUE(w.write(capped).is_ok());
  auto a = load_model(plain);
  auto b = load_model(capped);
  ASSERT_TRUE(a.model && b.model);
  EXPECT_FLOAT_EQ(b.model->config().attn_softcap, 0.3f);
  EXPECT_FLOAT_EQ(b.model->config().final_softcap, 1.5f);
  const std::vector<int32_t> seq = {1, 40, 300, 7, 99, 12, 480, 256};
  ops::ThreadPool pool(2);
  const auto got = model_logprobs(*b.model, seq, pool);
  EXPECT_LT(max_abs_difference(got, reference_logprobs(capped, seq)), 2e-4);
  EXPECT_GT(max_abs_difference(got, model_logprobs(*a.model, seq, pool)), 0.05);
}

// phi3's LongRoPE (a 128-position model whose factors were fitted at 32):
// served at its whole context it runs the long factors, served at 32 or less
// the short ones, as llama.cpp chooses by its context; each matches the
// float64 reference at that context, and the two differ. The attention
// factor from the file scales the rotated dimensions.
TEST(Architectures, LongRopePicksItsFactorsByTheServedContext) {
  model::SynthOptions o = small("phi3");
  o.long_rope_original_context = 32;
  const std::string path = temp_dir() + "/phi3_longrope_pick.gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, path).is_ok());
  auto file = gguf::GgufFile::open(path);
  ASSERT_TRUE(file.is_ok());
  auto whole = model::LlamaModel::load(*file);
  auto at_32 = model::LlamaModel::load(*file, 32);
  auto at_64 = model::LlamaModel::load(*file, 64);
  ASSERT_TRUE(whole.is_ok() && at_32.is_ok() && at_64.is_ok()) << whole.status().message();
  EXPECT_EQ((*whole)->config().rope_factors, "rope_factors_long.weight");
  EXPECT_EQ((*at_64)->config().rope_factors, "rope_factors_long.weight");
  EXPECT_EQ((*at_32)->config().rope_factors, "rope_factors_short.weight");
  EXPECT_EQ((*at_32)->serving_context(), 32);  // what a draft loaded beside it is given
  EXPECT_NEAR((*whole)->config().rope_attn_factor, std::sqrt(1.0 + std::log(4.0) / std::log(32.0)), 1e-6);
  std::vector<int32_t> seq = {1};
  std::mt19937 rng(9);
  std::uniform_int_distribution<int32_t> dist(3, 511);
  while (seq.size() < 12) seq.push_back(dist(rng));
  ops::ThreadPool pool(2);
  const auto long_lp = model_logprobs(**whole, seq, pool);
  const auto short_lp = model_logprobs(**at_32, seq, pool);
  EXPECT_LT(max_abs_difference(long_lp, reference_logprobs(path, seq)), 2e-4);
  EXPECT_LT(max_abs_difference(short_lp, reference_logprobs(path, seq, 32)), 2e-4);
  const double apart = max_abs_difference(long_lp, short_lp);
  std::printf("long against short factors: max |logprob difference| %.3f\n", apart);
  EXPECT_GT(apart, 0.05);
}

// Half of LongRoPE's pair is refused at load, naming the missing tensor.
TEST(Architectures, HalfALongRopePairIsRefusedNamingTheOtherHalf) {
  const std::string path = temp_dir() + "/phi3_plain.gguf";
  ASSERT_TRUE(model::write_synthetic_model(small("phi3"), path).is_ok());
  gguf::GgufWriter w;
  copy_into(path, w);
  const std::vector<float> factors(8, 1.0f);  // rope dims 16: 8 pairs
  std::vector<uint8_t> bytes(factors.size() * sizeof(float));
  std::memcpy(bytes.data(), factors.data(), bytes.size());
  ASSERT_TRUE(w.add_tensor("rope_factors_long.weight", TensorType::kF32, {factors.size()}, bytes).is_ok());
  const std::string longrope = temp_dir() + "/phi3_longrope_half.gguf";
  ASSERT_TRUE(w.write(longrope).is_ok());
  auto file = gguf::GgufFile::open(longrope);
  ASSERT_TRUE(file.is_ok());
  auto m = model::LlamaModel::load(*file);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("rope_factors_short.weight is missing"), std::string::npos)
      << m.status().message();
}

TEST(Architectures, SynthRefusesWhatItCannotWrite) {
  model::SynthOptions o = small("falcon");
  auto st = model::write_synthetic_model(o, temp_dir() + "/x.gguf");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("falcon"), std::string::npos) << st.message();
  auto r = model::synth_preset("retrieval");
  ASSERT_TRUE(r.is_ok());
  r->arch = "qwen2";
  st = model::write_synthetic_model(*r, temp_dir() + "/y.gguf");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--arch llama"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ladder::testing
