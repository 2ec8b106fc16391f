// BpeEncoder: byte-level BPE over one pre-tokenized piece, as llama.cpp's
// "gpt2" vocabulary does it. Each byte of the piece starts as the symbol of
// its byte-level character; the adjacent pair with the lowest merge rank is
// merged (leftmost on ties) until no ranked pair remains. Symbols are
// interned ids, so a merge is one hash look-up of an id pair.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

class BpeEncoder {
 public:
  // Fails on a merge that is not "left right".
  static Result<BpeEncoder> create(const Vocab& vocab, const TokenIndex& index, bool ignore_merges);

  // Appends the ids of one piece of raw bytes.
  void encode_piece(std::string_view piece, std::vector<int32_t>* out) const;

 private:
  BpeEncoder() = default;
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void emit_bytes(std::string_view bytes, std::vector<int32_t>* out) const;

  const TokenIndex* index_ = nullptr;
  int32_t n_vocab_ = 0;
  int32_t unknown_ = kNoToken;
  bool ignore_merges_ = false;
  // Ids >= n_vocab_ stand for merge parts or results that are not tokens
  // (only in malformed vocabularies); they never reach the output.
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_symbols_{};  // symbol id of each byte's character
};

}  // namespace ladder::tokenizer
