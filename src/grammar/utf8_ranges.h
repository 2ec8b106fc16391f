// Code point ranges as byte-range sequences: the UTF-8 encodings of the
// scalar values in [lo, hi] are exactly the byte strings matched by one of the
// returned sequences (each a byte range per position). The split follows the
// usual construction (RE2, Rust's regex-syntax): first by encoded length, then
// wherever a continuation byte's range would not be full.
#pragma once

#include <cstdint>
#include <vector>

namespace ladder::grammar {

struct ByteRange {
  uint8_t lo = 0;
  uint8_t hi = 0;  // inclusive
};

using ByteSequence = std::vector<ByteRange>;

// Appends to *out. lo..hi must hold no surrogate (normalize_ranges drops them).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>* out);

}  // namespace ladder::grammar
