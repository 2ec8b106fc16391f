// `ladder inspect` end to end: the real binary on the real model file, in
// text and JSON, and on a corrupt file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"

namespace ladder {
namespace {

using ladder::testing::ladder_bin;
using ladder::testing::run_command;
using ladder::testing::shared_path;

TEST(Inspect, TextShowsHeaderMetadataAndTensors) {
  const std::string model = shared_path("models/stories260K.gguf");
  auto r = run_command({ladder_bin(), "inspect", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GGUF version  3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensors       48"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("file size     1185376 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos);
  EXPECT_NE(r.out.find("\"llama\""), std::string::npos);
  // The 512-token vocabulary is summarised, not printed in full.
  EXPECT_NE(r.out.find("(512 items)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("<0x10>"), std::string::npos);
  EXPECT_NE(r.out.find("blk.2.ffn_down.weight"), std::string::npos);
  EXPECT_NE(r.out.find("[172, 64]"), std::string::npos);
  EXPECT_LT(r.out.size(), 10000u);
}

TEST(Inspect, JsonIsValidAndComplete) {
  const std::string model = shared_path("models/stories260K.gguf");
  auto r = run_command({ladder_bin(), "inspect", model, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails the test) on invalid JSON
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["alignment"], 32);
  EXPECT_EQ(j["file_size"], 1185376);
  EXPECT_EQ(j["n_tensors"], 48);
  ASSERT_EQ(j["tensors"].size(), 48u);
  bool found = false;
  for (const auto& t : j["tensors"]) {
    if (t["name"] == "blk.0.attn_k.weight") {
      found = true;
      EXPECT_EQ(t["type"], "F32");
      EXPECT_EQ(t["shape"], nlohmann::json::array({64, 32}));
      EXPECT_EQ(t["bytes"], 64 * 32 * 4);
      EXPECT_EQ(t["offset"].get<uint64_t>() % 32, 0u);
    }
  }
  EXPECT_TRUE(found);
  bool saw_tokens = false, saw_heads = false;
  for (const auto& m : j["metadata"]) {
    if (m["key"] == "tokenizer.ggml.tokens") {
      saw_tokens = true;
      EXPECT_EQ(m["type"], "array[string]");
      EXPECT_EQ(m["length"], 512);
      EXPECT_EQ(m["truncated"], true);
      EXPECT_LE(m["value"].size(), 8u);
      EXPECT_EQ(m["value"][1], "<s>");
    }
    if (m["key"] == "llama.attention.head_count") {
      saw_heads = true;
      EXPECT_EQ(m["value"], 8);
    }
  }
  EXPECT_TRUE(saw_tokens);
  EXPECT_TRUE(saw_heads);
}

TEST(Inspect, CorruptFileExitsOneWithAMessage) {
  const std::string model = ladder::testing::read_file(shared_path("models/stories260K.gguf"));
  const std::string bad = ladder::testing::temp_dir() + "/truncated.gguf";
  {
    std::ofstream out(bad, std::ios::binary);
    out.write(model.data(), 5000);  // cut inside the metadata
  }
  auto r = run_command({ladder_bin(), "inspect", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("truncated.gguf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gguf: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at byte"), std::string::npos) << r.err;

  auto missing = run_command({ladder_bin(), "inspect", "/nonexistent/x.gguf", "--json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/x.gguf"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ladder
