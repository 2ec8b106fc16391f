// Prompt text synthesized at a requested token length from real prose
// (../shared/text/war-and-peace.txt), for trace formats that carry only
// lengths. Tokens are approximated by a stated characters-per-token ratio
// (the record reports it, and the measured ratio from the server's usage).
//
// Shared prefixes: a trace's hash_ids name blocks of block_tokens tokens;
// block id h always becomes the same passage, so two requests whose hash_ids
// start alike get byte-identical prompt prefixes and a prefix cache sees the
// same sharing as the trace's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ladder::harness {

class TextSynthesizer {
 public:
  // corpus: any prose; whitespace runs become one space and non-ASCII bytes a
  // space, so that a character count maps evenly to tokens.
  TextSynthesizer(const std::string& corpus, double chars_per_token);

  static Result<TextSynthesizer> from_file(const std::string& path, double chars_per_token);

  double chars_per_token() const { return chars_per_token_; }
  size_t chars_for_tokens(int64_t tokens) const;

  // Exactly `chars` characters of the corpus starting at a word boundary that
  // `key` selects (wrapping around the end of the corpus).
  std::string passage(uint64_t key, size_t chars) const;

  // About `tokens` tokens: the blocks named by hash_ids (block_tokens each,
  // the last one cut short), then text unique to unique_key for any rest.
  std::string for_blocks(const std::vector<int64_t>& hash_ids, int64_t block_tokens, int64_t tokens,
                         uint64_t unique_key) const;

  const std::string& corpus() const { return corpus_; }

 private:
  std::string corpus_;
  double chars_per_token_;
};

// A well-mixed 64-bit hash (splitmix64 finalizer) for deriving offsets.
uint64_t mix64(uint64_t x);

}  // namespace ladder::harness
