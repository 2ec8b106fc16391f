#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace ladder::tokenizer {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(&vocab) {
  std::vector<int32_t> specials;
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    const TokenType t = vocab.types[static_cast<size_t>(id)];
    const bool special = t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
    if (special && !vocab.tokens[static_cast<size_t>(id)].empty()) specials.push_back(id);
  }
  // Claim order: longest text first, then lowest id.
  std::stable_sort(specials.begin(), specials.end(), [&](int32_t a, int32_t b) {
    return vocab.tokens[static_cast<size_t>(a)].size() > vocab.tokens[static_cast<size_t>(b)].size();
  });
  rank_.assign(static_cast<size_t>(vocab.n_vocab()), -1);
  in_data_ok_.assign(static_cast<size_t>(vocab.n_vocab()), false);
  for (int32_t id : specials) {
    in_data_ok_[static_cast<size_t>(id)] = vocab.types[static_cast<size_t>(id)] == TokenType::kUserDefined;
  }
  trie_.emplace_back();
  for (size_t r = 0; r < specials.size(); ++r) {
    const int32_t id = specials[r];
    rank_[static_cast<size_t>(id)] = static_cast<int32_t>(r);
    int32_t node = 0;
    for (char c : vocab.tokens[static_cast<size_t>(id)]) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(trie_.size());
        trie_.emplace_back();
        auto& kids = trie_[static_cast<size_t>(node)].children;
        kids.insert(std::upper_bound(kids.begin(), kids.end(), std::make_pair(byte, INT32_MIN)),
                    std::make_pair(byte, next));
      }
      node = next;
    }
    // Two ids with one text: the later id is the one the text maps to.
    trie_[static_cast<size_t>(node)].token = id;
  }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto& kids = trie_[static_cast<size_t>(node)].children;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, INT32_MIN));
  return it != kids.end() && it->first == byte ? it->second : -1;
}

bool SpecialTokenMatcher::eligible(int32_t id, bool parse_special) const {
  return parse_special || vocab_->types[static_cast<size_t>(id)] == TokenType::kUserDefined;
}

void SpecialTokenMatcher::forbid_in_data(int32_t id) {
  if (id >= 0 && static_cast<size_t>(id) < in_data_ok_.size()) in_data_ok_[static_cast<size_t>(id)] = false;
}

void SpecialTokenMatcher::partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const {
  partition_impl(
      text, [&](int32_t id, size_t, size_t) { return eligible(id, parse_special); }, out);
}

void SpecialTokenMatcher::partition_marked(const jinja::Text& text, std::vector<Fragment>* out) const {
  const std::vector<jinja::ByteRange>& data = text.data();
  auto touches_data = [&](size_t begin, size_t end) {
    // The first range that ends after `begin`.
    auto it = std::upper_bound(data.begin(), data.end(), begin,
                               [](size_t p, const jinja::ByteRange& r) { return p < r.end; });
    return it != data.end() && it->begin < end;
  };
  partition_impl(
      text.bytes(),
      [&](int32_t id, size_t begin, size_t end) {
        return !touches_data(begin, end) || in_data_ok_[static_cast<size_t>(id)];
      },
      out);
}

// eligible(id, begin, end): whether token `id` may claim text[begin, end).
template <typename Eligible>
void SpecialTokenMatcher::partition_impl(std::string_view text, const Eligible& eligible_at,
                                         std::vector<Fragment>* out) const {
  if (text.empty()) return;
  // Which special tokens occur at all (one trie walk per position); usually
  // none, and then the text is one raw fragment.
  std::vector<int32_t> present;
  if (trie_.size() > 1) {
    std::vector<bool> seen(rank_.size(), false);
    for (size_t pos = 0; pos < text.size(); ++pos) {
      int32_t node = 0;
      for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, static_cast<uint8_t>(text[i]));
        if (node < 0) break;
        const int32_t id = trie_[static_cast<size_t>(node)].token;
        if (id != kNoToken && !seen[static_cast<size_t>(id)] && eligible_at(id, pos, i + 1)) {
          seen[static_cast<size_t>(id)] = true;
          present.push_back(id);
        }
      }
    }
  }
  if (present.empty()) {
    out->push_back({kNoToken, text});
    return;
  }
  std::sort(present.begin(), present.end(),
            [&](int32_t a, int32_t b) { return rank_[static_cast<size_t>(a)] < rank_[static_cast<size_t>(b)]; });
  std::vector<Fragment> current{{kNoToken, text}};
  std::vector<Fragment> next;
  for (int32_t id : present) {
    const std::string_view tok = vocab_->tokens[static_cast<size_t>(id)];
    next.clear();
    for (const Fragment& f : current) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t from = 0, at; (at = rest.find(tok, from)) != std::string_view::npos;) {
        const auto begin = static_cast<size_t>(rest.data() - text.data()) + at;
        if (!eligible_at(id, begin, begin + tok.size())) {
          from = at + 1;
          continue;
        }
        if (at > 0) next.push_back({kNoToken, rest.substr(0, at)});
        next.push_back({id, {}});
        rest.remove_prefix(at + tok.size());
        from = 0;
      }
      if (!rest.empty()) next.push_back({kNoToken, rest});
    }
    std::swap(current, next);
  }
  out->insert(out->end(), current.begin(), current.end());
}

}  // namespace ladder::tokenizer
