// TokenIndex: token text -> id over a Vocab's strings (which it views, so the
// Vocab must outlive it and stay unmodified). Where two ids share a text, the
// later id wins, as in llama.cpp's token_to_id.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

class TokenIndex {
 public:
  explicit TokenIndex(const Vocab& vocab) {
    map_.reserve(vocab.tokens.size() * 2);
    for (size_t i = 0; i < vocab.tokens.size(); ++i) map_[vocab.tokens[i]] = static_cast<int32_t>(i);
  }
  TokenIndex(const TokenIndex&) = delete;
  TokenIndex& operator=(const TokenIndex&) = delete;

  int32_t find(std::string_view text) const {
    auto it = map_.find(text);
    return it == map_.end() ? kNoToken : it->second;
  }

 private:
  std::unordered_map<std::string_view, int32_t> map_;
};

}  // namespace ladder::tokenizer
