#include "common/utf8.h"

namespace ladder {

Utf8Step utf8_step(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return {Utf8Kind::kChar, 1, b0};
  // Continuation-byte count and the allowed range of the second byte, which is
  // where overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4) are excluded.
  size_t need = 0;
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0Fu;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07u;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Kind::kInvalid, 1, 0};
  }
  for (size_t i = 1; i <= need; ++i) {
    if (pos + i >= s.size()) return {Utf8Kind::kIncomplete, i, 0};
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if (b < lo || b > hi) return {Utf8Kind::kInvalid, i, 0};
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {Utf8Kind::kChar, need + 1, cp};
}

size_t utf8_char_length(std::string_view s, size_t pos) {
  if (static_cast<uint8_t>(s[pos]) < 0x80) return 1;
  const Utf8Step step = utf8_step(s, pos);
  return step.kind == Utf8Kind::kChar ? step.length : 1;
}

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind != Utf8Kind::kChar) return false;
    pos += step.length;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind == Utf8Kind::kChar) {
      out.append(s.substr(pos, step.length));
    } else {
      append_utf8(kReplacementChar, &out);
    }
    pos += step.length;
  }
  return out;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace ladder
