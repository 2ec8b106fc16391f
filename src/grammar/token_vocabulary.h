// TokenVocabulary: what a grammar needs to know about a model's vocabulary,
// built once per tokenizer and shared by every grammar compiled for it.
//
//   - each token's bytes (the text it adds to the output);
//   - which tokens are special (control, unknown, unused): never matched by
//     their bytes; a grammar may name one with <"text"> to match it as a unit;
//   - which tokens end generation (EOS, EOT, <|im_end|>, ...): allowed exactly
//     when the grammar may end;
//   - a byte trie over the other tokens, in preorder, so that a walk that
//     feeds a matcher one byte per trie edge and rolls back on the way up
//     checks each shared prefix once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace ladder::tokenizer {
class Tokenizer;
}

namespace ladder::grammar {

struct TrieNode {
  int32_t parent = -1;       // -1 for the root
  int32_t subtree_end = 0;   // preorder index just past this node's subtree
  int32_t tokens_begin = 0;  // [begin, end) into the node token list: tokens whose bytes end here
  int32_t tokens_end = 0;
  int32_t depth = 0;  // bytes from the root
  uint8_t byte = 0;   // the byte on the edge from the parent
};

class TokenVocabulary {
 public:
  // pieces[i]: the bytes token i writes; special[i]: token i is special;
  // texts[i]: the token's stored text, used to find the tokens a grammar
  // names (empty: the pieces); end_ids: tokens that end generation (they are
  // treated as special whatever their flag). Errors: mismatched sizes, an end
  // id outside the vocabulary.
  static Result<std::shared_ptr<const TokenVocabulary>> create(std::vector<std::string> pieces,
                                                               std::vector<bool> special,
                                                               std::vector<int32_t> end_ids,
                                                               std::vector<std::string> texts = {});
  // From a tokenizer: token_piece() bytes, is_special(), end_of_generation_ids().
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const tokenizer::Tokenizer& tokenizer);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  // uint64_t words of a mask over the vocabulary (bit i of word i / 64).
  size_t mask_words() const { return (pieces_.size() + 63) / 64; }
  std::string_view piece(int32_t id) const { return pieces_[id]; }
  bool is_special(int32_t id) const { return special_[id]; }
  bool is_end(int32_t id) const { return end_[id]; }
  const std::vector<int32_t>& end_ids() const { return end_ids_; }

  // The token whose stored text is exactly `text`, special tokens first; -1
  // when there is none.
  int32_t find_token(std::string_view text) const;

  // Preorder trie over the tokens that are neither special nor empty; [0] is
  // the root (no byte, no tokens).
  const std::vector<TrieNode>& trie() const { return trie_; }
  std::span<const int32_t> node_tokens(const TrieNode& node) const {
    return {node_tokens_.data() + node.tokens_begin,
            static_cast<size_t>(node.tokens_end - node.tokens_begin)};
  }
  // Trie node of a token, or -1 (special or empty).
  int32_t node_of(int32_t id) const { return node_of_[id]; }
  // Every byte value is some token's whole piece, so any byte string can be
  // written token by token (true for byte-fallback SentencePiece and
  // byte-level BPE vocabularies).
  bool covers_all_bytes() const { return covers_all_bytes_; }

 private:
  TokenVocabulary() = default;
  void build_trie();

  std::vector<std::string> pieces_;
  std::vector<std::string> texts_;
  std::vector<bool> special_;
  std::vector<bool> end_;
  std::vector<int32_t> end_ids_;
  std::unordered_map<std::string, int32_t> special_by_text_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> node_tokens_;
  std::vector<int32_t> node_of_;
  bool covers_all_bytes_ = false;
};

}  // namespace ladder::grammar
