// SpecialTokenMatcher: cuts text at the special tokens it contains before any
// model-specific tokenization, as llama.cpp's tokenizer_st_partition does.
// Control and unknown tokens are recognised only when parse_special is set;
// user-defined tokens always are (Hugging Face's "added tokens" behave so).
// Longer tokens claim the text first; each token's occurrences are taken
// left to right.
//
// Marked text (a rendered chat prompt, jinja/text.h) is cut with different
// rules inside and outside its data ranges: outside, every special token is
// recognised; an occurrence that touches data is recognised only for a
// user-defined token not forbidden in data (see forbid_in_data), so the
// markers a request writes in its messages stay text.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "jinja/text.h"
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
  // The same for marked text (the fragments view text.bytes()).
  void partition_marked(const jinja::Text& text, std::vector<Fragment>* out) const;

  // Never recognise this token where it touches data (ends of generation,
  // BOS/EOS and the like, even when the vocabulary calls them user-defined).
  void forbid_in_data(int32_t id);

 private:
  template <typename Eligible>
  void partition_impl(std::string_view text, const Eligible& eligible, std::vector<Fragment>* out) const;
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index), sorted by byte
    int32_t token = kNoToken;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  bool eligible(int32_t id, bool parse_special) const;

  const Vocab* vocab_;
  std::vector<int32_t> rank_;  // [n_vocab] position in claim order, or -1 for non-special
  std::vector<bool> in_data_ok_;  // [n_vocab] may match where it touches data
  std::vector<Node> trie_;     // [0] is the root
};

}  // namespace ladder::tokenizer
