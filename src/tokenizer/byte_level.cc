#include "tokenizer/byte_level.h"

#include <array>

#include "common/utf8.h"

namespace ladder::tokenizer {
namespace {

constexpr uint32_t kNoByte = 0xFFFFFFFFu;
constexpr uint32_t kAlphabetEnd = 0x144;  // the last stand-in is U+0143

bool is_self_mapped(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> to_char;           // byte -> UTF-8 of its character
  std::array<uint32_t, kAlphabetEnd> to_byte{};   // codepoint -> byte, or kNoByte
  Tables() {
    to_byte.fill(kNoByte);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = is_self_mapped(b) ? b : next++;
      append_utf8(cp, &to_char[b]);
      to_byte[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) { return tables().to_char[byte]; }

std::string byte_level_encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.to_char[static_cast<uint8_t>(c)];
  return out;
}

bool byte_level_decode(std::string_view text, std::string* out) {
  const Tables& t = tables();
  bool all_in_alphabet = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = utf8_step(text, pos);
    if (step.kind == Utf8Kind::kChar && step.codepoint < kAlphabetEnd && t.to_byte[step.codepoint] != kNoByte) {
      out->push_back(static_cast<char>(t.to_byte[step.codepoint]));
    } else {
      out->append(text.substr(pos, step.length));
      all_in_alphabet = false;
    }
    pos += step.length;
  }
  return all_in_alphabet;
}

}  // namespace ladder::tokenizer
