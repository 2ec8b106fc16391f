// `ladder synth --preset retrieval` and `ladder quantize` through the real
// binary: the retrieval model continues a text prompt by the induction rule
// (computed here on the token ids `generate` reports), and quantized files
// load and generate.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/induction.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

nlohmann::json generate(const std::string& model, const std::string& prompt, int n) {
  auto r = run_command({ladder_bin(), "generate", "--json", "-m", model, "-p", prompt, "-n",
                        std::to_string(n), "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(SynthRetrievalCli, ContinuesATextPromptByInduction) {
  const std::string path = temp_dir() + "/retrieval.gguf";
  auto r = run_command({ladder_bin(), "synth", "--preset", "retrieval", "-o", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("previous-token head peaks at offset 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "progress is for terminals only";
  // Words whose pieces occur once each in the stories260K vocabulary's
  // tokenization, then the first two again.
  auto j = generate(path, "Lily park ball dog cat tree happy big red mom sun toy. Lily park", 12);
  ASSERT_TRUE(j.contains("tokens"));
  const auto prompt = j["prompt_tokens"].get<std::vector<int32_t>>();
  const auto got = j["tokens"].get<std::vector<int32_t>>();
  const auto expected = induction_continuation(prompt, 12);
  ASSERT_GE(expected.size(), 10u);
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + static_cast<long>(expected.size())), expected);
  EXPECT_EQ(j["text"].get<std::string>().rfind(" ball dog cat tree happy big", 0), 0u) << j["text"];
}

// Wider is fine in heads of 128 (the extra capacity inert); two heads of 256
// are not.
TEST(SynthRetrievalCli, WidensInHeadsOf128AndRefusesOtherShapes) {
  auto r = run_command(
      {ladder_bin(), "synth", "--preset", "retrieval", "--dim", "512", "-o", temp_dir() + "/x.gguf"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("heads of dim 128"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(temp_dir() + "/x.gguf"));
  r = run_command({ladder_bin(), "synth", "--preset", "retrieval", "--dim", "512", "--heads", "4", "--layers", "3",
                   "-o", temp_dir() + "/wide.gguf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto shown = run_command({ladder_bin(), "inspect", temp_dir() + "/wide.gguf"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("blk.2.ffn_down.weight"), std::string::npos) << shown.out;
}

TEST(QuantizeCli, RefusesRowsThatDoNotFitUnlessToldHowToFallBack) {
  const std::string out = temp_dir() + "/refused.gguf";
  auto r =
      run_command({ladder_bin(), "quantize", shared_path("models/stories260K.gguf"), out, "--dtype", "q8_0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ffn_down.weight' has rows of 172"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--fallback"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  auto bad =
      run_command({ladder_bin(), "quantize", shared_path("models/stories260K.gguf"), out, "--dtype", "q3_k"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("q4_k"), std::string::npos) << "lists the choices: " << bad.err;
}

// Q8_0 keeps the greedy ids of the F32 model (all 64 when measured; at least
// the first 48 required); 4-bit files load and generate.
TEST(QuantizeCli, QuantizedStoriesLoadAndGenerate) {
  const auto f32 = generate(shared_path("models/stories260K.gguf"), "Once upon a time", 64)["tokens"]
                       .get<std::vector<int32_t>>();
  ASSERT_EQ(f32.size(), 64u);
  for (const char* dtype : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}) {
    const std::string out = temp_dir() + "/stories_" + dtype + ".gguf";
    auto r = run_command({ladder_bin(), "quantize", shared_path("models/stories260K.gguf"), out, "--dtype",
                          dtype, "--fallback", "auto"});
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find('\r'), std::string::npos) << "progress is for terminals only";
    auto j = generate(out, "Once upon a time", 64);
    const auto got = j["tokens"].get<std::vector<int32_t>>();
    ASSERT_EQ(got.size(), 64u) << dtype;
    size_t same = 0;
    while (same < got.size() && got[same] == f32[same]) ++same;
    std::printf("%-5s: %zu leading greedy ids match F32\n", dtype, same);
    if (std::string(dtype) == "q8_0") {
      EXPECT_GE(same, 48u);
    }
  }
}

TEST(QuantizeCli, HelpNamesTheCommand) {
  auto r = run_command({ladder_bin(), "--help"});
  EXPECT_NE(r.out.find("quantize"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ladder::testing
