// `ladder generate` and `ladder synth` through the real binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "test_support.h"

namespace ladder::testing {
namespace {

TEST(GenerateCli, GoldenIdsAndText) {
  auto r = run_command({ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"), "-p",
                        "Once upon a time", "-n", "64", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"].get<std::vector<int>>(), (std::vector<int>{1, 403, 407, 261, 378}));
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), kStoriesGolden64);
  EXPECT_EQ(j["text"].get<std::string>(),
            ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
            "red ball. She wanted to play with it, but it was too high.\nLily's mom said");
}

// The default KV cache is F16; F32 is one flag away. Both keep the golden
// ids on this model; q8 and q4 run (approximately: their ids may differ),
// and an unknown format is a usage error.
TEST(GenerateCli, KvDtypeOption) {
  for (const char* dtype : {"f32", "F16"}) {
    auto r = run_command({ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"), "-p",
                          "Once upon a time", "-n", "64", "--temp", "0", "--kv-dtype", dtype});
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>(), kStoriesGolden64) << dtype;
  }
  for (const char* dtype : {"q8", "q4"}) {
    auto r = run_command({ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"), "-p",
                          "Once upon a time", "-n", "64", "--temp", "0", "--kv-dtype", dtype});
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), kStoriesGolden64.size()) << dtype;
  }
  // A model draft plans its KV pool as the engine does: q4's staging slots
  // included (it used to fail with "needs at least one staging slot").
  for (const char* dtype : {"q8", "q4"}) {
    auto r = run_command({ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"), "-p",
                          "Once upon a time", "-n", "64", "--temp", "0", "--kv-dtype", dtype, "--spec",
                          "early-exit:2"});
    ASSERT_EQ(r.exit_code, 0) << dtype << " + early-exit draft: " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), kStoriesGolden64.size()) << dtype;
  }
  auto bad = run_command({ladder_bin(), "generate", "-m", shared_path("models/stories260K.gguf"), "-p", "hi",
                          "--kv-dtype", "q5"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--kv-dtype"), std::string::npos) << bad.err;
}

TEST(GenerateCli, ParallelGreedyCopiesAgreeWithGolden) {
  auto r = run_command({ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"), "-p",
                        "Once upon a time", "-n", "64", "--temp", "0", "--parallel", "5", "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 5u);
  for (const auto& seq : j) EXPECT_EQ(seq["tokens"].get<std::vector<int32_t>>(), kStoriesGolden64);
}

TEST(GenerateCli, SeededSamplingIsReproducible) {
  std::vector<std::string> argv = {ladder_bin(), "generate", "--json", "-m", shared_path("models/stories260K.gguf"),
                                   "-p", "Once upon a time", "-n", "32", "--temp", "1.0", "--seed", "42"};
  auto a = run_command(argv), b = run_command(argv);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["tokens"], nlohmann::json::parse(b.out)["tokens"]);
}

TEST(GenerateCli, StatsReportRatesBandwidthAndLogitsHash) {
  auto r = run_command({ladder_bin(), "generate", "-m", shared_path("models/stories260K.gguf"), "-p", "Once upon a time",
                        "-n", "16", "--temp", "0", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("prefill"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GB/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("last logits sha256"), std::string::npos) << r.err;
}

TEST(GenerateCli, FallsBackToAGeneratedSyntheticModel) {
  const std::string cache = temp_dir() + "/xdg-cache";
  auto r = run_command({"/usr/bin/env", "LADDER_SHARED_DIR=/nonexistent-shared", "LADDER_MODEL=", "XDG_CACHE_HOME=" + cache,
                        ladder_bin(), "generate", "--json", "-p", "hello", "-n", "4", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 4u);
  EXPECT_NE(r.err.find("synthetic model"), std::string::npos) << r.err;
  EXPECT_FALSE(read_file(cache + "/ladder/synth-tiny.gguf").empty());
}

TEST(GenerateCli, MissingModelFileIsAClearError) {
  auto r = run_command({ladder_bin(), "generate", "-m", "/nonexistent/model.gguf", "-p", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}

TEST(GenerateCli, PromptLongerThanContextIsRejected) {
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "Once upon a time ";
  auto r = run_command({ladder_bin(), "generate", "-m", shared_path("models/stories260K.gguf"), "-p", prompt, "-n", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
}

TEST(SynthCli, TinyModelGeneratesAndInspects) {
  const std::string path = temp_dir() + "/synth_tiny.gguf";
  auto s = run_command({ladder_bin(), "synth", "--preset", "tiny", "--dtype", "q8_0", "--builtin-vocab", "--seed", "1",
                        "-o", path});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto g = run_command({ladder_bin(), "generate", "--json", "-m", path, "-p", "hello", "-n", "8", "--temp", "0"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["tokens"].size(), 8u);
}

TEST(SynthCli, RealVocabularyIsCopied) {
  const std::string path = temp_dir() + "/synth_spm.gguf";
  auto s = run_command({ladder_bin(), "synth", "--dim", "64", "--layers", "1", "--heads", "2", "--ffn", "128", "--vocab-from",
                        shared_path("tokenizers/ggml-vocab-llama-spm.gguf"), "-o", path});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  // The copied tokenizer tokenizes like the vocabulary it came from.
  auto t = run_command({ladder_bin(), "tokenize", "-m", path, "--no-bos", "Hello world"});
  auto ref = run_command({ladder_bin(), "tokenize", "-m", shared_path("tokenizers/ggml-vocab-llama-spm.gguf"), "--no-bos",
                          "Hello world"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, ref.out);
}

TEST(SynthCli, BadShapesAreRejected) {
  auto r = run_command({ladder_bin(), "synth", "--dim", "100", "--heads", "3", "-o", temp_dir() + "/bad.gguf"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("multiple"), std::string::npos) << r.err;
  auto q = run_command({ladder_bin(), "synth", "--preset", "tiny", "--dtype", "q4_k", "-o", temp_dir() + "/bad2.gguf"});
  EXPECT_NE(q.exit_code, 0);
  EXPECT_NE(q.err.find("256"), std::string::npos) << q.err;
}

}  // namespace
}  // namespace ladder::testing

namespace ladder::testing {
namespace {

TEST(BenchCli, ModelReportsRooflineRatios) {
  auto r = run_command({ladder_bin(), "bench", "model", "-m", shared_path("models/stories260K.gguf"), "--batch", "1,2",
                        "--prompt", "64", "--context", "8", "--steps", "2", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decode batch 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% of BW"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode batch 2"), std::string::npos) << r.out;
  // Prefill of float weights against the FMA peak (quantized ones: int8).
  EXPECT_NE(r.out.find("% of FMA"), std::string::npos) << r.out;
  auto bad = run_command({ladder_bin(), "bench", "model", "-m", shared_path("models/stories260K.gguf"), "--batch", "x"});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace ladder::testing

namespace ladder::testing {
namespace {

TEST(BenchCli, EngineComparesTogetherWithOneByOne) {
  auto r = run_command({ladder_bin(), "bench", "engine", "-m", shared_path("models/stories260K.gguf"), "--requests", "6",
                        "--prompt", "20", "--output", "12", "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speedup:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("identical token for token"), std::string::npos) << r.out;
  auto too_long = run_command({ladder_bin(), "bench", "engine", "-m", shared_path("models/stories260K.gguf"), "--prompt",
                               "120", "--output", "64"});
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("context"), std::string::npos) << too_long.err;
}

}  // namespace
}  // namespace ladder::testing

namespace ladder::testing {
namespace {

// ladder chat --chat-template: the text of a template, or a file that must exist.
TEST(ChatCli, TakesAChatTemplate) {
  auto ok = run_command({ladder_bin(), "chat", "-n", "4", "--chat-template",
                         "{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}[assistant]"},
                        "Hi\n/exit\n");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto missing = run_command({ladder_bin(), "chat", "--chat-template", temp_dir() + "/missing.jinja"}, "/exit\n");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("missing.jinja"), std::string::npos) << missing.err;
}

// A model that cannot be loaded is named once, with what is wrong, by every
// command that loads one; the exit status is not 0.
TEST(ModelErrors, NameThePathOnce) {
  const std::string bad = temp_dir() + "/not-a-model.gguf";
  {
    std::ofstream(bad) << "garbage, not GGUF";
  }
  const std::vector<std::vector<std::string>> commands = {
      {ladder_bin(), "generate", "-m", bad, "-p", "x"},
      {ladder_bin(), "chat", "-m", bad},
      {ladder_bin(), "serve", "-m", bad, "--port", "0"},
      {ladder_bin(), "generate", "-m", bad + ".missing", "-p", "x"},
  };
  for (const auto& argv : commands) {
    auto r = run_command(argv, "");
    EXPECT_NE(r.exit_code, 0) << argv[1];
    const std::string& path = argv[3];
    const size_t first = r.err.find(path);
    ASSERT_NE(first, std::string::npos) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.err.find(path, first + path.size()), std::string::npos) << argv[1] << " names the path twice: " << r.err;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ladder::testing
