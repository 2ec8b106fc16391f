// The real test vectors in ../shared/tokenizers (llama.cpp's test-tokenizer-0
// format, golden ids from the reference tokenizers, no BOS): every line must
// be reproduced exactly, and decode must give every string back.
#include <gtest/gtest.h>

#include <string>

#include "tokenizer_test_util.h"

namespace ladder::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::load_vectors;

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

class VocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, EncodeMatchesGoldenIdsAndDecodeRoundTrips) {
  const std::string rel = std::string("tokenizers/ggml-vocab-") + GetParam() + ".gguf";
  auto tok = load_tokenizer(rel);
  ASSERT_NE(tok, nullptr);
  const auto vectors = load_vectors(rel);
  ASSERT_EQ(vectors.size(), 46u);
  int mismatches = 0;
  for (const auto& v : vectors) {
    const std::vector<int32_t> got = tok->encode(v.text, /*add_bos=*/false, /*parse_special=*/false);
    if (got != v.ids) {
      ++mismatches;
      ADD_FAILURE() << GetParam() << ": text [" << v.text << "]\n  expected" << show(v.ids) << "\n  got     "
                    << show(got);
    }
    EXPECT_EQ(tok->decode(v.ids), v.text) << GetParam() << ": decode of the golden ids of [" << v.text << "]";
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabVectors, ::testing::Values("llama-spm", "gpt-2", "deepseek-llm", "falcon"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace ladder::tokenizer
