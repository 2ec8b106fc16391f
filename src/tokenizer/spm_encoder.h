// SpmEncoder: SentencePiece-style encoding as llama.cpp's "llama" vocabulary
// does it. The text (spaces already escaped to "▁") is split into UTF-8
// characters; adjacent symbols whose concatenation is a token are merged,
// highest score first (leftmost on ties), until no pair forms a token; a
// symbol that is not a token falls back to its bytes as <0xNN> tokens (or
// <unk> when the vocabulary has no byte tokens).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

class SpmEncoder {
 public:
  // Fails when some byte has neither a <0xNN> token, a one-byte token nor an
  // <unk> to fall back on.
  static Result<SpmEncoder> create(const Vocab& vocab, const TokenIndex& index);

  // Appends the ids of `escaped` (text with ' ' replaced by "▁").
  void encode(std::string_view escaped, std::vector<int32_t>* out) const;

  // True when no token spans "x▁" with x not itself "▁": text can then be cut
  // before every word-initial "▁" without changing the result, which lets
  // repeated words be encoded once.
  bool splits_at_words() const { return splits_at_words_; }

 private:
  SpmEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(&vocab), index_(&index) {}
  struct Scratch;
  void encode_segment(std::string_view seg, std::vector<int32_t>* out, Scratch* s) const;

  const Vocab* vocab_;
  const TokenIndex* index_;
  std::array<int32_t, 256> byte_tokens_{};  // fallback id of each byte
  bool splits_at_words_ = false;
};

}  // namespace ladder::tokenizer
