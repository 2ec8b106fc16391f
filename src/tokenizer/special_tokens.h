// SpecialTokenMatcher: cuts text at the special tokens it contains before any
// model-specific tokenization, as llama.cpp's tokenizer_st_partition does.
// Control and unknown tokens are recognised only when parse_special is set;
// user-defined tokens always are (Hugging Face's "added tokens" behave so).
// Longer tokens claim the text first; each token's occurrences are taken
// left to right.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

struct Fragment {
  int32_t token = kNoToken;  // a special token, or kNoToken for raw text
  std::string_view text;     // the raw text (a view into the input) when token == kNoToken
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Appends the fragments of `text` in order; raw fragments are never empty.
  void partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index), sorted by byte
    int32_t token = kNoToken;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  bool eligible(int32_t id, bool parse_special) const;

  const Vocab* vocab_;
  std::vector<int32_t> rank_;  // [n_vocab] position in claim order, or -1 for non-special
  std::vector<Node> trie_;     // [0] is the root
};

}  // namespace ladder::tokenizer
