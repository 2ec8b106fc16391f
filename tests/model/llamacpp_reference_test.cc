// Ladder's logits against llama.cpp's on the same synthetic GGUF, for every
// architecture `ladder synth` writes that llama.cpp knows and four weight
// types. tests/data/llamacpp_logits/ARCH-DTYPE.json holds what llama.cpp
// (built outside the project; the version is in each file) computed for a
// fixed prompt of token ids and 32 greedy steps after it
// (scripts/llamacpp_logits.sh, bench/llamacpp_logits.cc). The test writes
// the same model again from the recorded synth arguments, feeds Ladder the
// prompt and llama.cpp's greedy tokens, and at every step compares the
// logits of llama.cpp's top 5 tokens (a tolerance per weight type) and, for
// F32 weights, that Ladder's greedy choice is llama.cpp's at every step
// (with F16 and quantized weights near-ties of these random models may flip:
// the count is printed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "model/synth.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

std::filesystem::path data_dir() {
  return std::filesystem::path(LADDER_TEST_SOURCE_DIR) / "data" / "llamacpp_logits";
}

// The synth arguments a reference file records ("--preset tiny --dim 256 ...").
model::SynthOptions synth_options(const nlohmann::json& synth) {
  model::SynthOptions o;
  std::istringstream in(synth.at("args").get<std::string>());
  std::vector<std::string> args{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--builtin-vocab") continue;  // the default of SynthOptions (no vocab_from)
    if (i + 1 >= args.size()) {
      ADD_FAILURE() << flag << " without a value";
      break;
    }
    const std::string& value = args[++i];
    if (flag == "--preset") {
      auto p = model::synth_preset(value);
      EXPECT_TRUE(p.is_ok()) << value;
      if (p.is_ok()) o = *p;
    } else if (flag == "--dim") {
      o.dim = std::stoll(value);
    } else if (flag == "--heads") {
      o.n_heads = std::stoll(value);
    } else if (flag == "--kv-heads") {
      o.n_kv_heads = std::stoll(value);
    } else if (flag == "--ffn") {
      o.ffn_dim = std::stoll(value);
    } else if (flag == "--vocab") {
      o.n_vocab = std::stoll(value);
    } else if (flag == "--seed") {
      o.seed = std::stoull(value);
    } else if (flag == "--sliding-window") {
      o.sliding_window = std::stoll(value);
    } else {
      ADD_FAILURE() << "a synth argument this test does not read: " << flag;
    }
  }
  EXPECT_NE(std::find(args.begin(), args.end(), "--builtin-vocab"), args.end())
      << "references are made with the built-in vocabulary";
  o.arch = synth.at("arch").get<std::string>();
  auto type = tensor_type_from_name(synth.at("dtype").get<std::string>());
  EXPECT_TRUE(type.has_value());
  o.dtype = type.value_or(TensorType::kF32);
  return o;
}

// Largest |Ladder - llama.cpp| allowed for a logit (these models' logits
// are about 1 in size), at about twice the largest difference measured over
// the six architectures. F32: the SiLU architectures agree to 5e-6; gemma's
// GELU is a table of F16 values in llama.cpp (2.3e-4 measured). F16: the
// engines round activations differently (6e-4 measured). Q8_0 and Q4_K: each
// engine quantizes the activations its own way (0.015 and 0.027 measured).
double tolerance(TensorType t, const std::string& arch) {
  switch (t) {
    case TensorType::kF32: return arch.rfind("gemma", 0) == 0 ? 5e-4 : 2e-5;
    case TensorType::kF16: return 2e-3;
    case TensorType::kQ8_0: return 0.04;
    default: return 0.06;
  }
}

std::vector<std::string> reference_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir(), ec)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(LlamaCppReference, EveryArchitectureAndWeightTypeIsPresent) {
  const auto files = reference_files();
  for (const char* arch : {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}) {
    for (const char* dtype : {"f32", "f16", "q8_0", "q4_k"}) {
      const std::string name = std::string(arch) + "-" + dtype + ".json";
      EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name << " in " << data_dir();
    }
  }
  // Windows shorter than the prompt, where llama.cpp applies them.
  for (const char* name : {"gemma2-f32-window8.json", "gemma3-f32-window8.json"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name << " in " << data_dir();
  }
}

class LlamaCppReference : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppReference, LogitsAndGreedyTokensMatch) {
  std::ifstream in(data_dir() / GetParam());
  ASSERT_TRUE(in) << GetParam();
  const nlohmann::json ref = nlohmann::json::parse(in);
  const model::SynthOptions o = synth_options(ref.at("synth"));
  const std::string path = temp_dir() + "/llamacpp_ref_" + GetParam() + ".gguf";
  Status st = model::write_synthetic_model(o, path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  auto m = load_model(path);
  ASSERT_TRUE(m.model);

  // The prompt, then llama.cpp's greedy tokens (teacher forcing: Ladder is
  // compared at the same context at every step).
  std::vector<int32_t> seq = ref.at("prompt").get<std::vector<int32_t>>();
  const auto& steps = ref.at("steps");
  const size_t n_prompt = seq.size();
  for (size_t s = 0; s + 1 < steps.size(); ++s) seq.push_back(steps[s].at("id").get<int32_t>());
  const auto n_vocab = static_cast<size_t>(m.model->config().n_vocab);
  ops::ThreadPool pool(2);
  // F32 KV, as the reference was made.
  model::DenseKv kv(m.model->config(), 1, static_cast<int64_t>(seq.size()), 16, TensorType::kF32);
  std::vector<float> logits(seq.size() * n_vocab);
  model::BatchSequence s;
  s.tokens = std::span<const int32_t>(seq.data(), seq.size());
  s.block_table = kv.block_table(0);
  s.logits = model::BatchSequence::Logits::kAll;
  st = m.model->forward({&s, 1}, kv.buffers(), logits, pool);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::filesystem::remove(path);

  const double tol = tolerance(o.dtype, o.arch);
  const bool exact_ids = o.dtype == TensorType::kF32;  // the others: counted, not required
  double worst = 0;
  int ids_equal = 0;
  for (size_t step = 0; step < steps.size(); ++step) {
    const float* l = logits.data() + (n_prompt - 1 + step) * n_vocab;
    for (const auto& top : steps[step].at("top")) {
      const auto id = top.at(0).get<size_t>();
      ASSERT_LT(id, n_vocab);
      const double diff = std::fabs(static_cast<double>(l[id]) - top.at(1).get<double>());
      worst = std::max(worst, diff);
      EXPECT_LE(diff, tol) << GetParam() << " step " << step << " token " << id;
    }
    const int32_t ours = argmax(l, static_cast<int64_t>(n_vocab));
    ids_equal += ours == steps[step].at("id").get<int32_t>() ? 1 : 0;
    if (exact_ids) {
      EXPECT_EQ(ours, steps[step].at("id").get<int32_t>()) << GetParam() << " step " << step;
    }
  }
  std::printf("%s: largest logit difference %.3g (tolerance %.3g), greedy ids equal at %d of %zu steps\n",
              GetParam().c_str(), worst, tol, ids_equal, steps.size());
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppReference, ::testing::ValuesIn(reference_files()), [](const auto& p) {
  std::string n = p.param.substr(0, p.param.size() - 5);
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
});

}  // namespace
}  // namespace ladder::testing
