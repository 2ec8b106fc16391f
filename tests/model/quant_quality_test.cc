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
//
// QuantizeDefaults measures what `ladder quantize --dtype T` writes (llama.cpp's
// output-head rule, --fallback auto) on both models and prints the table of
// docs/BENCHMARKS.md.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gguf/requantize.h"
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

// `src` requantized with `options` into a temporary file named by `tag`.
std::string requantize(const std::string& src, const gguf::RequantizeOptions& options, const std::string& tag) {
  auto in = gguf::GgufFile::open(src);
  EXPECT_TRUE(in.is_ok());
  if (!in.is_ok()) return "";
  const std::string path = temp_dir() + "/" + tag + "_" + std::string(tensor_type_name(options.dtype)) + ".gguf";
  auto st = gguf::requantize_file(*in, path, options);
  EXPECT_TRUE(st.is_ok()) << st.status().to_string();
  return path;
}

// stories260K with every matrix whose rows fit the block size converted to
// `type` (output head included), the others kept in F32.
std::string requantize_stories(TensorType type) {
  gguf::RequantizeOptions o;
  o.dtype = type;
  o.output_dtype = type;
  o.fallback = {gguf::Fallback::Kind::kType, TensorType::kF32};
  return requantize(shared_path("models/stories260K.gguf"), o, "stories_fit");
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

struct Agreement {
  double top1 = 0;  // fraction of positions whose argmax matches the reference
  double kl = 0;    // mean KL(reference || candidate), nats
};

// Over a natural sequence: the reference model's own greedy continuation of
// "Once upon a time" (or of a few ids for the synthetic model), 256 tokens.
Agreement agreement(const model::LlamaModel& ref, const model::LlamaModel& q, bool stories, ops::ThreadPool& pool) {
  const int64_t n_vocab = ref.config().n_vocab;
  std::vector<int32_t> seq = stories ? kStoriesPrompt : std::vector<int32_t>{1, 300, 301, 302};
  const int64_t len = std::min<int64_t>(256, ref.config().context_length);
  auto cont = greedy(ref, seq, static_cast<int>(len - static_cast<int64_t>(seq.size())), pool);
  seq.insert(seq.end(), cont.begin(), cont.end());
  const auto a = prompt_logits(ref, seq, 0, pool);
  const auto b = prompt_logits(q, seq, 0, pool);
  int agree = 0;
  double kl_sum = 0;
  for (size_t t = 0; t < seq.size(); ++t) {
    const float* ra = a.data() + t * static_cast<size_t>(n_vocab);
    const float* rb = b.data() + t * static_cast<size_t>(n_vocab);
    agree += argmax(ra, n_vocab) == argmax(rb, n_vocab);
    const auto la = log_softmax(ra, n_vocab), lb = log_softmax(rb, n_vocab);
    double kl = 0;
    for (size_t i = 0; i < la.size(); ++i) kl += std::exp(la[i]) * (la[i] - lb[i]);
    kl_sum += kl;
  }
  return {agree / static_cast<double>(seq.size()), kl_sum / static_cast<double>(seq.size())};
}

class QuantQuality : public ::testing::TestWithParam<Threshold> {};

TEST_P(QuantQuality, AgreesWithF32) {
  const Threshold th = GetParam();
  ops::ThreadPool pool(2);
  auto ref = load_model(th.real_model ? shared_path("models/stories260K.gguf") : write_model(TensorType::kF32));
  auto q = load_model(th.real_model ? requantize_stories(th.type) : write_model(th.type));
  ASSERT_TRUE(ref.model && q.model);
  const Agreement ag = agreement(*ref.model, *q.model, th.real_model, pool);
  std::printf("%-5s top-1 agreement %.3f (min %.2f), mean KL %.5f (max %.4f)\n",
              std::string(tensor_type_name(th.type)).c_str(), ag.top1, th.min_top1, ag.kl, th.max_kl);
  EXPECT_GE(ag.top1, th.min_top1);
  EXPECT_LE(ag.kl, th.max_kl);
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

// What `ladder quantize IN OUT --dtype T --fallback auto` writes, per type:
// stories260K (64-wide rows: K-quants fall back to Q5_0 / Q5_1 / Q8_0, and
// ffn_down's 172-wide rows to F16) and the dim-256 synthetic model, where
// every type fits. The output head follows llama.cpp (Q6_K when its rows fit
// 256, else Q8_0). Prints a markdown table.
struct DefaultsCase {
  TensorType type;
  double stories_min_top1, stories_max_kl;  // stories260K
  double synth_max_kl;                      // the synthetic model (top-1 is a weak signal there)
};

// What `ladder quantize --dtype type --fallback auto` writes.
std::string requantize_defaults(const std::string& src, TensorType type, const std::string& tag) {
  gguf::RequantizeOptions o;
  o.dtype = type;
  o.fallback = {gguf::Fallback::Kind::kAuto, TensorType::kF16};
  return requantize(src, o, tag + "_defaults");
}

// A measurement: the sanitizer stage leaves it to the release suite.
TEST(QuantizeDefaultsSlow, PerTypeTable) {
  ops::ThreadPool pool(2);
  const std::string stories = shared_path("models/stories260K.gguf");
  const std::string synth = write_model(TensorType::kF32);
  auto stories_ref = load_model(stories);
  auto synth_ref = load_model(synth);
  ASSERT_TRUE(stories_ref.model && synth_ref.model);
  std::printf("| --dtype | stories260K MiB | top-1 | mean KL | golden ids kept | synthetic dim-256 top-1 | mean KL |\n"
              "|---|---|---|---|---|---|---|\n");
  for (const DefaultsCase c : {DefaultsCase{TensorType::kF32, 1.0, 1e-9, 1e-9},
                               DefaultsCase{TensorType::kF16, 0.99, 1e-4, 1e-3},
                               DefaultsCase{TensorType::kBF16, 0.97, 1e-3, 1e-2},
                               DefaultsCase{TensorType::kQ8_0, 0.97, 1e-3, 5e-3},
                               DefaultsCase{TensorType::kQ6_K, 0.97, 1e-3, 0.02},
                               DefaultsCase{TensorType::kQ5_K, 0.90, 0.03, 0.08},
                               DefaultsCase{TensorType::kQ5_1, 0.90, 0.03, 0.08},
                               DefaultsCase{TensorType::kQ5_0, 0.90, 0.03, 0.08},
                               DefaultsCase{TensorType::kQ4_K, 0.90, 0.03, 0.3},
                               DefaultsCase{TensorType::kQ4_1, 0.75, 0.12, 0.3},
                               DefaultsCase{TensorType::kQ4_0, 0.75, 0.12, 0.3}}) {
    const std::string name(tensor_type_name(c.type));
    const std::string sq = requantize_defaults(stories, c.type, "stories");
    auto s = load_model(sq);
    auto y = load_model(requantize_defaults(synth, c.type, "synth"));
    ASSERT_TRUE(s.model && y.model) << name;
    const Agreement as = agreement(*stories_ref.model, *s.model, true, pool);
    const Agreement ay = agreement(*synth_ref.model, *y.model, false, pool);
    const auto ids = greedy(*s.model, kStoriesPrompt, 64, pool);
    size_t kept = 0;
    while (kept < ids.size() && ids[kept] == kStoriesGolden64[kept]) ++kept;
    std::printf("| %s | %.2f | %.3f | %.5f | %zu of 64 | %.3f | %.5f |\n", name.c_str(),
                static_cast<double>(std::filesystem::file_size(sq)) / (1 << 20), as.top1, as.kl, kept, ay.top1, ay.kl);
    EXPECT_GE(as.top1, c.stories_min_top1) << name;
    EXPECT_LE(as.kl, c.stories_max_kl) << name;
    EXPECT_LE(ay.kl, c.synth_max_kl) << name;
    if (c.type == TensorType::kQ8_0) {
      EXPECT_GE(kept, 48u) << "Q8_0 keeps at least the first 48 golden ids";
    }
  }
}

}  // namespace
}  // namespace ladder::testing
