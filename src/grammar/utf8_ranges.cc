#include "grammar/utf8_ranges.h"

#include <string>

#include "common/utf8.h"

namespace ladder::grammar {
namespace {

int encoded_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// lo..hi share one encoded length.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteSequence>* out) {
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the bits held by the last i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, out);
        split_same_length((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, out);
        split_same_length(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a;
  std::string b;
  append_utf8(lo, &a);
  append_utf8(hi, &b);
  ByteSequence seq(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    seq[k] = {static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])};
  }
  out->push_back(std::move(seq));
}

}  // namespace

void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>* out) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (uint32_t end : kLengthEnds) {
    if (lo > hi) return;
    if (lo > end) continue;
    uint32_t piece_hi = hi < end ? hi : end;
    split_same_length(lo, piece_hi, out);
    lo = piece_hi + 1;
  }
}

}  // namespace ladder::grammar
