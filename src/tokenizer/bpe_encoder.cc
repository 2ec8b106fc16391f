#include "tokenizer/bpe_encoder.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/byte_level.h"

namespace ladder::tokenizer {

Result<BpeEncoder> BpeEncoder::create(const Vocab& vocab, const TokenIndex& index, bool ignore_merges) {
  BpeEncoder enc;
  enc.index_ = &index;
  enc.n_vocab_ = vocab.n_vocab();
  enc.unknown_ = vocab.special.unknown;
  enc.ignore_merges_ = ignore_merges;
  std::unordered_map<std::string, int32_t> extra;  // non-token strings -> synthetic id
  auto intern = [&](const std::string& text) {
    const int32_t id = index.find(text);
    if (id != kNoToken) return id;
    auto [it, inserted] = extra.emplace(text, enc.n_vocab_ + static_cast<int32_t>(extra.size()));
    return it->second;
  };
  for (int b = 0; b < 256; ++b) enc.byte_symbols_[static_cast<size_t>(b)] = intern(byte_level_char(static_cast<uint8_t>(b)));
  enc.merges_.reserve(vocab.merges.size() * 2);
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& m = vocab.merges[rank];
    // The separator is the first space after the first character ("  " would be
    // a merge of a space with something in a non-byte-level vocabulary).
    const size_t sep = m.find(' ', 1);
    if (sep == std::string::npos || sep + 1 >= m.size()) {
      return invalid_argument(fmt::format("tokenizer.ggml.merges[{}] = '{}' is not of the form 'left right'", rank, m));
    }
    const std::string left = m.substr(0, sep);
    const std::string right = m.substr(sep + 1);
    const int32_t l = intern(left);
    const int32_t r = intern(right);
    const int32_t result = intern(left + right);
    enc.merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});  // first rank wins
  }
  return enc;
}

void BpeEncoder::emit_bytes(std::string_view bytes, std::vector<int32_t>* out) const {
  for (char c : bytes) {
    const int32_t id = byte_symbols_[static_cast<uint8_t>(c)];
    if (id < n_vocab_) {
      out->push_back(id);
    } else if (unknown_ != kNoToken) {
      out->push_back(unknown_);
    }
  }
}

void BpeEncoder::encode_piece(std::string_view piece, std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const int32_t whole = index_->find(byte_level_encode(piece));
    if (whole != kNoToken) {
      out->push_back(whole);
      return;
    }
  }
  if (piece.size() == 1) {
    emit_bytes(piece, out);
    return;
  }
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t begin;
    uint32_t length;  // 0 once merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t left_id;   // the pair as it was when queued; stale when either changed
    int32_t right_id;
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  heap.clear();
  const auto n = static_cast<int32_t>(piece.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols.push_back({byte_symbols_[static_cast<uint8_t>(piece[static_cast<size_t>(i)])], i - 1,
                       i + 1 == n ? -1 : i + 1, static_cast<uint32_t>(i), 1});
  }
  // Min-heap on rank; among equal ranks (the same pair twice) the leftmost first.
  auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t lid = symbols[static_cast<size_t>(left)].id;
    const int32_t rid = symbols[static_cast<size_t>(right)].id;
    auto it = merges_.find(pair_key(lid, rid));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, right, lid, rid});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& l = symbols[static_cast<size_t>(top.left)];
    Symbol& r = symbols[static_cast<size_t>(top.right)];
    if (l.length == 0 || r.length == 0 || l.id != top.left_id || r.id != top.right_id) continue;
    l.id = merges_.find(pair_key(l.id, r.id))->second.result;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = top.left;
    try_add(l.prev, top.left);
    try_add(top.left, l.next);
  }
  for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& sym = symbols[static_cast<size_t>(i)];
    if (sym.id < n_vocab_) {
      out->push_back(sym.id);
    } else {
      emit_bytes(piece.substr(sym.begin, sym.length), out);
    }
  }
}

}  // namespace ladder::tokenizer
