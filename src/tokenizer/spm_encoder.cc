#include "tokenizer/spm_encoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "tokenizer/flat_string_map.h"
#include "common/utf8.h"

namespace ladder::tokenizer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

}  // namespace

struct SpmEncoder::Scratch {
  struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t begin;  // byte offset in the segment
    uint32_t length;  // 0 once merged into its left neighbour
  };
  struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;  // bytes of the pair when it was queued; stale when it differs
  };
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

Result<SpmEncoder> SpmEncoder::create(const Vocab& vocab, const TokenIndex& index) {
  SpmEncoder enc(vocab, index);
  for (int b = 0; b < 256; ++b) {
    int32_t id = index.find(fmt::format("<0x{:02X}>", b));
    if (id == kNoToken) id = index.find(std::string(1, static_cast<char>(b)));
    if (id == kNoToken) id = vocab.special.unknown;
    if (id == kNoToken) {
      return invalid_argument(fmt::format(
          "tokenizer: byte 0x{:02X} has no <0x{:02X}> token, no one-byte token and the vocabulary has no <unk>", b, b));
    }
    enc.byte_tokens_[static_cast<size_t>(b)] = id;
  }
  enc.splits_at_words_ = true;
  for (const std::string& t : vocab.tokens) {
    // Any "▁" preceded by something other than a run of "▁" from the start?
    size_t lead = 0;
    while (t.compare(lead, kSpace.size(), kSpace) == 0) lead += kSpace.size();
    if (t.find(kSpace, lead) != std::string::npos) {
      enc.splits_at_words_ = false;
      break;
    }
  }
  return enc;
}

void SpmEncoder::encode(std::string_view escaped, std::vector<int32_t>* out) const {
  Scratch scratch;
  if (!splits_at_words_) {
    encode_segment(escaped, out, &scratch);
    return;
  }
  // Segments start at a "▁" that follows something else; a repeated segment
  // copies the ids it produced the first time: [begin, begin + count) of *out.
  FlatStringMap<std::pair<size_t, size_t>> seen(escaped.size() / 16);
  size_t seg_begin = 0;
  size_t pos = 0;
  bool prev_is_space = false;
  auto flush = [&](size_t end) {
    if (end == seg_begin) return;
    const std::string_view seg = escaped.substr(seg_begin, end - seg_begin);
    if (const auto* range = seen.find(seg)) {
      const auto [begin, count] = *range;
      for (size_t i = 0; i < count; ++i) out->push_back((*out)[begin + i]);
    } else {
      const size_t begin = out->size();
      encode_segment(seg, out, &scratch);
      seen.insert(seg, std::make_pair(begin, out->size() - begin));
    }
    seg_begin = end;
  };
  while (pos < escaped.size()) {
    const bool is_space = escaped.compare(pos, kSpace.size(), kSpace) == 0;
    if (is_space && !prev_is_space) flush(pos);
    prev_is_space = is_space;
    pos += is_space ? kSpace.size() : utf8_char_length(escaped, pos);
  }
  flush(escaped.size());
}

void SpmEncoder::encode_segment(std::string_view seg, std::vector<int32_t>* out, Scratch* s) const {
  using Symbol = Scratch::Symbol;
  using Bigram = Scratch::Bigram;
  auto& symbols = s->symbols;
  auto& heap = s->heap;
  symbols.clear();
  heap.clear();
  for (size_t pos = 0; pos < seg.size();) {
    const size_t len = utf8_char_length(seg, pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + len == seg.size() ? -1 : index + 1, static_cast<uint32_t>(pos),
                       static_cast<uint32_t>(len)});
    pos += len;
  }
  // Max-heap on score; among equal scores the leftmost pair comes first.
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const int32_t id = index_->find(seg.substr(l.begin, l.length + r.length));
    if (id == kNoToken) return;
    heap.push_back({vocab_->scores[static_cast<size_t>(id)], left, right, l.length + r.length});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Bigram top = heap.back();
    heap.pop_back();
    Symbol& l = symbols[static_cast<size_t>(top.left)];
    Symbol& r = symbols[static_cast<size_t>(top.right)];
    if (l.length == 0 || r.length == 0 || l.length + r.length != top.size) continue;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = top.left;
    try_add(l.prev, top.left);
    try_add(top.left, l.next);
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& sym = symbols[static_cast<size_t>(i)];
    const std::string_view text = seg.substr(sym.begin, sym.length);
    const int32_t id = index_->find(text);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    for (char c : text) out->push_back(byte_tokens_[static_cast<uint8_t>(c)]);
  }
}

}  // namespace ladder::tokenizer
