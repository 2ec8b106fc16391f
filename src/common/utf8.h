// UTF-8 at byte granularity: walking a string that may be ill-formed, and the
// one replacement policy Ladder uses everywhere (Unicode's "maximal subpart":
// each maximal ill-formed subsequence becomes one U+FFFD), so that a streamed
// detokenization and a one-shot sanitize of the same bytes agree exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ladder {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

enum class Utf8Kind {
  kChar,        // a complete, well-formed character
  kInvalid,     // a maximal ill-formed subpart: no later byte can make it valid
  kIncomplete,  // a well-formed prefix cut off by the end of the string
};

struct Utf8Step {
  Utf8Kind kind = Utf8Kind::kInvalid;
  size_t length = 1;       // bytes covered, >= 1
  uint32_t codepoint = 0;  // valid for kChar only
};

// Classifies the bytes starting at s[pos] (pos < s.size()).
Utf8Step utf8_step(std::string_view s, size_t pos);

// Length of the well-formed character at s[pos], or 1 for a byte that does not
// start one (an ill-formed or truncated sequence is walked byte by byte).
size_t utf8_char_length(std::string_view s, size_t pos);

bool is_valid_utf8(std::string_view s);

// s with every maximal ill-formed subpart (including a truncated tail)
// replaced by U+FFFD; s itself when it is valid.
std::string sanitize_utf8(std::string_view s);

void append_utf8(uint32_t codepoint, std::string* out);

}  // namespace ladder
