// IncrementalDetokenizer: token ids in, UTF-8 text out, one token at a time,
// for streaming. A character whose bytes arrive over several tokens (byte
// fallback, byte-level pieces) is held until it is complete, so every chunk
// push() returns is valid UTF-8. Concatenating every push() and the final
// flush() gives exactly sanitize_utf8(tokenizer.decode(all ids)) (which is
// decode(all) itself whenever that is valid UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ladder::tokenizer {

class IncrementalDetokenizer {
 public:
  // at_sequence_start: the ids begin a sequence (after BOS or nothing), so
  // the SentencePiece space prefix of the first piece is dropped as decode()
  // drops it. Pass false for a continuation, e.g. the tokens generated after
  // a prompt, where a leading space is real text.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true,
                                  bool at_sequence_start = true);

  // With skip_special, these special tokens still write their text (markers
  // a caller parses, such as tool-call tags).
  void show_special(std::vector<int32_t> ids);

  // The text completed by this token ("" while a character is unfinished).
  std::string push(int32_t id);
  // What is still held: an unfinished character becomes U+FFFD.
  std::string flush();

  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::vector<int32_t> shown_;  // sorted
  DecodeState state_;
  std::string pending_;
};

}  // namespace ladder::tokenizer
