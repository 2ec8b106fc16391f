// `ladder tokenize` end to end: the real binary on the real models.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"

namespace ladder {
namespace {

using ladder::testing::ladder_bin;
using ladder::testing::run_command;
using ladder::testing::shared_path;

TEST(CliTokenize, PrintsIdsWithBos) {
  const auto r = run_command({ladder_bin(), "tokenize", "-m", shared_path("models/stories260K.gguf"), "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
}

TEST(CliTokenize, NoBosAndStdin) {
  const auto r = run_command({ladder_bin(), "tokenize", "-m", shared_path("models/stories260K.gguf"), "--no-bos"},
                             "Once upon a time");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403 407 261 378\n");
}

TEST(CliTokenize, JsonWithPiecesAndParseSpecial) {
  const std::string vocab = shared_path("tokenizers/ggml-vocab-llama-spm.gguf");
  const auto r = run_command({ladder_bin(), "tokenize", "-m", vocab, "--json", "--no-bos", "--parse-special",
                              "Hello<s>world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json::parse("[15043, 1, 3186]"));
  EXPECT_EQ(j["pieces"], nlohmann::json::parse(R"([" Hello", "<s>", " world"])"));
  // Without --parse-special "<s>" is plain text.
  const auto plain = run_command({ladder_bin(), "tokenize", "-m", vocab, "--json", "--no-bos", "Hello<s>world"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto jp = nlohmann::json::parse(plain.out);
  for (const auto& id : jp["ids"]) EXPECT_NE(id.get<int>(), 1);
}

TEST(CliTokenize, JsonShowsByteTokensByTheirText) {
  const auto r = run_command({ladder_bin(), "tokenize", "-m", shared_path("tokenizers/ggml-vocab-llama-spm.gguf"),
                              "--json", "--no-bos", "\xF0\x9F\xA6\x99"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json::parse("[29871, 243, 162, 169, 156]"));
  EXPECT_EQ(j["pieces"], nlohmann::json::parse(R"([" ", "<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"])"));
}

TEST(CliTokenize, MissingFileIsAnErrorNotACrash) {
  const auto r = run_command({ladder_bin(), "tokenize", "-m", "/nonexistent/model.gguf", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ladder
