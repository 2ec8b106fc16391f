// GPT-2's byte-level alphabet: every byte 0..255 is given a printable Unicode
// character (printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100..U+0143 in byte order), so that a byte-level BPE vocabulary can store
// arbitrary bytes as text ("Ġ" is the space byte 0x20).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ladder::tokenizer {

// UTF-8 of the character standing for `byte`.
const std::string& byte_level_char(uint8_t byte);

// Byte-level text of raw bytes: one character per byte.
std::string byte_level_encode(std::string_view bytes);

// Raw bytes of byte-level text. A character outside the alphabet (never in a
// well-formed vocabulary) is kept as its own UTF-8 so that nothing is lost;
// the return value says whether every character was in the alphabet.
bool byte_level_decode(std::string_view text, std::string* out);

}  // namespace ladder::tokenizer
