// TokenIndex: token text -> id over a Vocab's strings (which it views, so the
// Vocab must outlive it and stay unmodified). Where two ids share a text, the
// later id wins, as in llama.cpp's token_to_id.
#pragma once

#include <cstdint>
#include <string_view>

#include "tokenizer/flat_string_map.h"
#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

class TokenIndex {
 public:
  explicit TokenIndex(const Vocab& vocab) : map_(vocab.tokens.size()) {
    for (size_t i = 0; i < vocab.tokens.size(); ++i) map_.insert_or_assign(vocab.tokens[i], static_cast<int32_t>(i));
  }
  TokenIndex(const TokenIndex&) = delete;
  TokenIndex& operator=(const TokenIndex&) = delete;

  int32_t find(std::string_view text) const {
    const int32_t* id = map_.find(text);
    return id == nullptr ? kNoToken : *id;
  }

 private:
  FlatStringMap<int32_t> map_;
};

}  // namespace ladder::tokenizer
