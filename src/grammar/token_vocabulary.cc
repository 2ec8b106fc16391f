#include "grammar/token_vocabulary.h"

#include <algorithm>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace ladder::grammar {

Result<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::create(std::vector<std::string> pieces,
                                                                       std::vector<bool> special,
                                                                       std::vector<int32_t> end_ids,
                                                                       std::vector<std::string> texts) {
  const size_t n = pieces.size();
  if (special.size() != n) {
    return invalid_argument("token vocabulary: " + std::to_string(special.size()) + " special flags for " +
                            std::to_string(n) + " tokens");
  }
  if (!texts.empty() && texts.size() != n) {
    return invalid_argument("token vocabulary: " + std::to_string(texts.size()) + " texts for " +
                            std::to_string(n) + " tokens");
  }
  if (n > static_cast<size_t>(INT32_MAX)) return out_of_range("token vocabulary too large");
  std::shared_ptr<TokenVocabulary> v(new TokenVocabulary());
  v->pieces_ = std::move(pieces);
  v->texts_ = texts.empty() ? v->pieces_ : std::move(texts);
  v->special_ = std::move(special);
  v->end_.assign(n, false);
  for (int32_t id : end_ids) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      return invalid_argument("token vocabulary: end token " + std::to_string(id) +
                              " is outside the vocabulary of " + std::to_string(n));
    }
    if (!v->end_[id]) v->end_ids_.push_back(id);
    v->end_[id] = true;
    v->special_[id] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (v->special_[i]) v->special_by_text_.emplace(v->texts_[i], static_cast<int32_t>(i));
  }
  v->build_trie();
  return std::shared_ptr<const TokenVocabulary>(std::move(v));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const tokenizer::Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  std::vector<std::string> pieces(n);
  std::vector<std::string> texts(n);
  std::vector<bool> special(n);
  for (int32_t i = 0; i < n; ++i) {
    pieces[i] = std::string(tokenizer.token_piece(i));
    texts[i] = std::string(tokenizer.token_text(i));
    special[i] = tokenizer.is_special(i);
  }
  std::vector<int32_t> ends = tokenizer.end_of_generation_ids();
  if (tokenizer.eos_id() >= 0 && std::find(ends.begin(), ends.end(), tokenizer.eos_id()) == ends.end()) {
    ends.push_back(tokenizer.eos_id());
  }
  // A tokenizer's ids are in range by construction.
  return std::move(create(std::move(pieces), std::move(special), std::move(ends), std::move(texts))).value();
}

int32_t TokenVocabulary::find_token(std::string_view text) const {
  auto it = special_by_text_.find(std::string(text));
  if (it != special_by_text_.end()) return it->second;
  for (size_t i = 0; i < texts_.size(); ++i) {
    if (texts_[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

void TokenVocabulary::build_trie() {
  const int32_t n = size();
  node_of_.assign(n, -1);
  std::vector<int32_t> order;
  for (int32_t i = 0; i < n; ++i) {
    if (!special_[i] && !pieces_[i].empty()) order.push_back(i);
  }
  // std::string compares bytes as unsigned (char_traits<char> is memcmp-like).
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return pieces_[a] < pieces_[b]; });

  trie_.clear();
  trie_.push_back(TrieNode{});
  std::vector<int32_t> path = {0};              // path[d]: node at depth d on the current branch
  std::vector<std::vector<int32_t>> tokens_at;  // [node] tokens ending there
  tokens_at.emplace_back();
  std::string_view prev;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth + 1) {
      trie_[path.back()].subtree_end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
  };
  for (int32_t id : order) {
    std::string_view p = pieces_[id];
    size_t common = 0;
    while (common < p.size() && common < prev.size() && p[common] == prev[common]) ++common;
    close_to(common);
    for (size_t d = common; d < p.size(); ++d) {
      TrieNode node;
      node.parent = path.back();
      node.depth = static_cast<int32_t>(d + 1);
      node.byte = static_cast<uint8_t>(p[d]);
      path.push_back(static_cast<int32_t>(trie_.size()));
      trie_.push_back(node);
      tokens_at.emplace_back();
    }
    tokens_at[path.back()].push_back(id);
    node_of_[id] = path.back();
    prev = p;
  }
  close_to(0);
  trie_[0].subtree_end = static_cast<int32_t>(trie_.size());
  for (size_t i = 0; i < trie_.size(); ++i) {
    trie_[i].tokens_begin = static_cast<int32_t>(node_tokens_.size());
    node_tokens_.insert(node_tokens_.end(), tokens_at[i].begin(), tokens_at[i].end());
    trie_[i].tokens_end = static_cast<int32_t>(node_tokens_.size());
  }
  // Single-byte pieces sit at depth 1.
  std::vector<bool> byte_seen(256, false);
  for (size_t i = 1; i < trie_.size(); ++i) {
    if (trie_[i].depth == 1 && trie_[i].tokens_end > trie_[i].tokens_begin) byte_seen[trie_[i].byte] = true;
  }
  covers_all_bytes_ = std::all_of(byte_seen.begin(), byte_seen.end(), [](bool b) { return b; });
}

}  // namespace ladder::grammar
