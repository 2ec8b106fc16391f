// The pre-tokenizer of a byte-level BPE vocabulary: the split rules that
// `tokenizer.ggml.pre` names, as llama.cpp defines them. A rule set is a list
// of regexes applied in turn; each one re-splits every piece the previous ones
// produced, and the text between its matches stays as pieces of their own, so
// nothing is ever dropped. BPE merges then never cross a piece boundary.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ladder::tokenizer {

struct PreTokenizerRules {
  std::string canonical;             // the family this `pre` belongs to, e.g. "llama3"
  std::vector<std::string> regexes;  // PCRE2 patterns, UTF + UCP
  bool ignore_merges = false;        // a piece that is itself a token is emitted whole (Llama 3)
};

// The rules for a `tokenizer.ggml.pre` value; kUnimplemented naming the value
// (and listing the supported ones) when Ladder does not know it.
Result<PreTokenizerRules> pre_tokenizer_rules(std::string_view pre);

// The `pre` values pre_tokenizer_rules() accepts.
const std::vector<std::string>& supported_pre_tokenizers();

class PreTokenizer {
 public:
  static Result<PreTokenizer> create(std::string_view pre);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Appends the pieces of `text` (views into it, in order, covering it
  // exactly) to *pieces. Ill-formed UTF-8 bytes are pieces of their own and
  // never reach the regexes. Thread-safe.
  void split(std::string_view text, std::vector<std::string_view>* pieces) const;

  const PreTokenizerRules& rules() const { return rules_; }

 private:
  PreTokenizer() = default;
  struct Compiled;

  PreTokenizerRules rules_;
  std::vector<std::unique_ptr<Compiled>> compiled_;  // [regexes.size()]
};

}  // namespace ladder::tokenizer
