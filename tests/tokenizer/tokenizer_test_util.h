// Shared helpers of the tokenizer tests: loading a vocabulary from ../shared
// and reading llama.cpp's test-vector files (*.inp / *.out).
#pragma once

#include <gtest/gtest.h>

#include <ctime>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace ladder::tokenizer::testing {

// The `now` chat templates render dates from, fixed so that outputs compare.
inline constexpr std::time_t kFixedNow = 1767225600;  // 2026-01-01T00:00:00Z

// Loads a fresh tokenizer from ../shared/REL.
inline std::unique_ptr<Tokenizer> load_tokenizer_uncached(const std::string& rel) {
  const std::string path = ladder::testing::shared_path(rel);
  if (path.empty()) return nullptr;
  auto file = gguf::GgufFile::open(path);
  if (!file.is_ok()) {
    ADD_FAILURE() << file.status().to_string();
    return nullptr;
  }
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.is_ok()) {
    ADD_FAILURE() << rel << ": " << tok.status().to_string();
    return nullptr;
  }
  return std::move(tok).value();
}

// The tokenizer of ../shared/REL, loaded once per test binary (tokenizers are
// immutable; loading a 100k-token vocabulary is the slow part under ASan).
inline std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& rel) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto it = cache.find(rel);
  if (it != cache.end()) return it->second;
  std::shared_ptr<const Tokenizer> tok = load_tokenizer_uncached(rel);
  if (tok) cache.emplace(rel, tok);
  return tok;
}

struct VocabVector {
  std::string text;
  std::vector<int32_t> ids;
};

// NAME.gguf.inp: test strings separated by "\n__ggml_vocab_test__\n";
// NAME.gguf.out: one line of space-separated ids per string.
inline std::vector<VocabVector> load_vectors(const std::string& vocab_rel) {
  std::vector<VocabVector> out;
  const std::string inp_path = ladder::testing::shared_path(vocab_rel + ".inp");
  const std::string out_path = ladder::testing::shared_path(vocab_rel + ".out");
  if (inp_path.empty() || out_path.empty()) return out;
  const std::string inp = ladder::testing::read_file(inp_path);
  const std::string expected = ladder::testing::read_file(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream lines(expected);
  std::string line;
  std::vector<std::vector<int32_t>> ids;
  while (std::getline(lines, line)) {
    std::istringstream nums(line);
    std::vector<int32_t> row;
    int32_t v = 0;
    while (nums >> v) row.push_back(v);
    ids.push_back(std::move(row));
  }
  EXPECT_EQ(texts.size(), ids.size()) << vocab_rel << ": .inp and .out disagree on the number of tests";
  for (size_t i = 0; i < texts.size() && i < ids.size(); ++i) out.push_back({texts[i], ids[i]});
  return out;
}

}  // namespace ladder::tokenizer::testing
