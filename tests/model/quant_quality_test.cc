// Quantized weights against the same weights in F32: next-token top-1
// agreement and mean KL(F32 || quantized) over the positions of a natural
// sequence.
//
// Block-32 types and F16/BF16 are measured on the real trained model
// stories260K, requantized: every matrix whose rows are a multiple of the
// block size (all but ffn_down, whose rows are 172 long) is converted. The
// 256-element K-quants cannot divide its 64-wide rows, so they are measured on
// a synthetic model (random N(0, 0.08) weights, dim 256, 2 layers) whose
// near-flat, chaotic distributions make top-1 a weak signal there; their KL
// bound is what catches a broken layout. The thresholds are stated per type;
// measured values are printed, and a broken kernel or block layout (wrong
// scale, swapped nibbles) lands far outside.
#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf_writer.h"
#include "gguf/quant.h"
#include "model/synth.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

struct Threshold {
  TensorType type;
  bool real_model;  // stories260K requantized, else the synthetic model
  double min_top1;  // fraction of positions whose argmax matches F32
  double max_kl;    // mean KL divergence in nats
};

// stories260K with every eligible matrix converted to `type`.
std::string requantize_stories(TensorType type) {
  auto src = gguf::GgufFile::open(shared_path("models/stories260K.gguf"));
  EXPECT_TRUE(src.is_ok());
  if (!src.is_ok()) return "";
  gguf::GgufWriter w;
  for (const auto& [key, value] : src->metadata()) w.set(key, value);
  const auto& traits = traits_of(type);
  for (const auto& t : src->tensors()) {
    const bool eligible = t.shape.size() == 2 && t.type == TensorType::kF32 && t.shape[0] % traits.block_elems == 0;
    if (!eligible) {
      EXPECT_TRUE(w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)).is_ok());
      continue;
    }
    const size_t n_in = t.shape[0], rows = t.shape[1], rb = row_bytes(traits, n_in);
    std::vector<uint8_t> bytes(rb * rows);
    for (size_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(gguf::quantize_row(type, reinterpret_cast<const float*>(t.data) + r * n_in, bytes.data() + r * rb, n_in)
                      .is_ok());
    }
    EXPECT_TRUE(w.add_tensor(t.name, type, t.shape, std::move(bytes)).is_ok());
  }
  const std::string path = temp_dir() + "/stories_" + std::string(traits.name) + ".gguf";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

std::string write_model(TensorType type) {
  model::SynthOptions o;
  o.dim = 256, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 512, o.n_vocab = 1024;
  o.init_std = 0.08f;
  o.dtype = type;
  o.seed = 11;
  const std::string path = temp_dir() + "/quality_" + std::string(tensor_type_name(type)) + ".gguf";
  Status st = model::write_synthetic_model(o, path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return path;
}

std::vector<double> log_softmax(const float* x, int64_t n) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] - lse;
  return out;
}

class QuantQuality : public ::testing::TestWithParam<Threshold> {};

TEST_P(QuantQuality, AgreesWithF32) {
  const Threshold th = GetParam();
  ops::ThreadPool pool(2);
  auto ref = load_model(th.real_model ? shared_path("models/stories260K.gguf") : write_model(TensorType::kF32));
  auto q = load_model(th.real_model ? requantize_stories(th.type) : write_model(th.type));
  ASSERT_TRUE(ref.model && q.model);
  const int64_t n_vocab = ref.model->config().n_vocab;
  // A natural sequence: the F32 model's own greedy continuation of "Once
  // upon a time" (or of a few ids for the synthetic model), as long as the
  // context allows.
  std::vector<int32_t> seq = th.real_model ? std::vector<int32_t>{1, 403, 407, 261, 378} : std::vector<int32_t>{1, 300, 301, 302};
  const int64_t len = std::min<int64_t>(256, ref.model->config().context_length);
  auto cont = greedy(*ref.model, seq, static_cast<int>(len - static_cast<int64_t>(seq.size())), pool);
  seq.insert(seq.end(), cont.begin(), cont.end());
  const auto a = prompt_logits(*ref.model, seq, 0, pool);
  const auto b = prompt_logits(*q.model, seq, 0, pool);
  int agree = 0;
  double kl_sum = 0;
  for (size_t t = 0; t < seq.size(); ++t) {
    const float* ra = a.data() + t * static_cast<size_t>(n_vocab);
    const float* rb = b.data() + t * static_cast<size_t>(n_vocab);
    agree += argmax(ra, n_vocab) == argmax(rb, n_vocab);
    const auto la = log_softmax(ra, n_vocab), lb = log_softmax(rb, n_vocab);
    double kl = 0;
    for (int64_t i = 0; i < n_vocab; ++i) kl += std::exp(la[static_cast<size_t>(i)]) * (la[static_cast<size_t>(i)] - lb[static_cast<size_t>(i)]);
    kl_sum += kl;
  }
  const double top1 = agree / static_cast<double>(seq.size());
  const double kl = kl_sum / static_cast<double>(seq.size());
  std::printf("%-5s top-1 agreement %.3f (min %.2f), mean KL %.5f (max %.4f)\n",
              std::string(tensor_type_name(th.type)).c_str(), top1, th.min_top1, kl, th.max_kl);
  EXPECT_GE(top1, th.min_top1);
  EXPECT_LE(kl, th.max_kl);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantQuality,
                         ::testing::Values(Threshold{TensorType::kF16, true, 0.99, 1e-4},
                                           Threshold{TensorType::kBF16, true, 0.97, 1e-3},
                                           Threshold{TensorType::kQ8_0, true, 0.97, 1e-3},
                                           Threshold{TensorType::kQ5_0, true, 0.90, 0.03},
                                           Threshold{TensorType::kQ5_1, true, 0.90, 0.03},
                                           Threshold{TensorType::kQ4_0, true, 0.75, 0.12},
                                           Threshold{TensorType::kQ4_1, true, 0.75, 0.12},
                                           Threshold{TensorType::kQ6_K, false, 0.70, 0.02},
                                           Threshold{TensorType::kQ5_K, false, 0.50, 0.08},
                                           Threshold{TensorType::kQ4_K, false, 0.25, 0.3}),
                         [](const auto& p) { return std::string(tensor_type_name(p.param.type)); });

}  // namespace
}  // namespace ladder::testing
