// `ladder inspect` end to end: the real binary on the real model file, in
// text and JSON, and on a corrupt file.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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
  EXPECT_NE(r.out.find("architecture  llama (Ladder serves it)"), std::string::npos) << r.out;
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
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["supported"], true);
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

// A small GGUF written byte by byte (the cli suite does not link gguf/):
// a 1000-byte string with a newline, a 100-item u8 array, a nested array.
std::string long_values_file() {
  std::string b;
  auto u32 = [&b](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&b](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& v) { u64(v.size()), b += v; };
  u32(0x46554747), u32(3), u64(0), u64(3);
  str("long.text"), u32(8), str("line one\n" + std::string(991, 'x'));
  str("many.bytes"), u32(9), u32(0), u64(100);
  for (int i = 0; i < 100; ++i) b.push_back(static_cast<char>(i));
  str("nested"), u32(9), u32(9), u64(2);
  u32(5), u64(1), u32(7);  // [7]
  u32(5), u64(0);          // []
  const std::string path = ladder::testing::temp_dir() + "/long.gguf";
  std::ofstream(path, std::ios::binary) << b;
  return path;
}

TEST(Inspect, LongStringsAndArraysAreSummarised) {
  const std::string path = long_values_file();
  auto text = run_command({ladder_bin(), "inspect", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\"line one\\nxxx"), std::string::npos) << text.out;  // newline escaped
  EXPECT_NE(text.out.find("(truncated, 1000 bytes)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find(std::string(300, 'x')), std::string::npos);
  EXPECT_NE(text.out.find("[0, 1, 2, 3, 4, 5, 6, 7, ...] (100 items)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("array[array[int32]]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[[7], []]"), std::string::npos) << text.out;

  auto js = run_command({ladder_bin(), "inspect", "--json", path});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  nlohmann::json j = nlohmann::json::parse(js.out);
  ASSERT_EQ(j["metadata"].size(), 3u);
  const auto& s = j["metadata"][0];
  EXPECT_EQ(s["key"], "long.text");
  EXPECT_EQ(s["truncated"], true);
  EXPECT_EQ(s["length"], 1000);
  EXPECT_EQ(s["value"].get<std::string>().size(), 200u);
  const auto& a = j["metadata"][1];
  EXPECT_EQ(a["type"], "array[uint8]");
  EXPECT_EQ(a["length"], 100);
  EXPECT_EQ(a["value"], nlohmann::json::array({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(j["metadata"][2]["value"], nlohmann::json::parse("[[7], []]"));
  EXPECT_EQ(j["n_tensors"], 0);
}

TEST(Inspect, AnArchitectureLadderDoesNotServeIsNamedWithTheSupportedList) {
  // stories260K relabelled "gemma" (as long as "llama"): a well-formed file.
  // Its tokenizer stays "llama" (the string value after the key, its type
  // and its length), so that loading gets as far as the architecture.
  std::string bytes = ladder::testing::read_file(shared_path("models/stories260K.gguf"));
  for (size_t at = bytes.find("llama"); at != std::string::npos; at = bytes.find("llama", at + 5)) {
    bytes.replace(at, 5, "gemma");
  }
  const std::string tokenizer_key = "tokenizer.ggml.model";
  const size_t key_at = bytes.find(tokenizer_key);
  ASSERT_NE(key_at, std::string::npos);
  bytes.replace(key_at + tokenizer_key.size() + 4 + 8, 5, "llama");
  const std::string path = ladder::testing::temp_dir() + "/gemma.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  auto r = run_command({ladder_bin(), "inspect", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture  gemma (Ladder does not serve it: unsupported model architecture 'gemma'"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3"), std::string::npos) << r.out;
  auto js = run_command({ladder_bin(), "inspect", "--json", path});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  nlohmann::json j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["architecture"], "gemma");
  EXPECT_EQ(j["supported"], false);
  EXPECT_NE(j["unsupported_reason"].get<std::string>().find("gemma"), std::string::npos);
  // Serving it is refused at load with the same line.
  auto served = run_command({ladder_bin(), "generate", "-m", path, "-p", "Once", "-n", "2"});
  EXPECT_NE(served.exit_code, 0);
  EXPECT_NE(served.err.find("unsupported model architecture 'gemma'"), std::string::npos) << served.err;
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
