#include "jinja/string_util.h"

#include <algorithm>
#include <cstdint>

#include "common/utf8.h"

namespace ladder::jinja {

bool py_isspace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1f');
}

namespace {

// Multi-byte UTF-8 encodings of the non-ASCII characters Python counts as whitespace.
constexpr std::string_view kUnicodeSpaces[] = {
    "\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
    "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
    "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
    "\xE3\x80\x80"};

}  // namespace

bool cp_isspace(uint32_t c) {
  if (c < 0x80) return py_isspace(static_cast<char>(c));
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool cp_isprintable(uint32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x80) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || c >= 0xF0000) return false;  // surrogates, private use
  return true;
}

size_t space_len_at(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  if (py_isspace(s[i])) return 1;
  if (static_cast<unsigned char>(s[i]) < 0xC2) return 0;
  for (std::string_view sp : kUnicodeSpaces) {
    if (s.substr(i, sp.size()) == sp) return sp.size();
  }
  return 0;
}

size_t space_len_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  if (py_isspace(s[end - 1])) return 1;
  for (std::string_view sp : kUnicodeSpaces) {
    if (end >= sp.size() && s.substr(end - sp.size(), sp.size()) == sp) return sp.size();
  }
  return 0;
}

std::string_view py_strip(std::string_view s, bool left, bool right, const std::string* chars) {
  size_t b = 0, e = s.size();
  if (chars) {
    // Explicit characters are matched per code point.
    auto strip_at = [&](size_t i) -> size_t {
      size_t len = 1;
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0xF0) len = 4;
      else if (c >= 0xE0) len = 3;
      else if (c >= 0xC0) len = 2;
      std::string_view cp = s.substr(i, len);
      for (size_t k = 0; k < chars->size();) {
        size_t clen = 1;
        unsigned char d = static_cast<unsigned char>((*chars)[k]);
        if (d >= 0xF0) clen = 4;
        else if (d >= 0xE0) clen = 3;
        else if (d >= 0xC0) clen = 2;
        if (std::string_view(*chars).substr(k, clen) == cp) return len;
        k += clen;
      }
      return 0;
    };
    if (left) {
      while (b < e) {
        size_t n = strip_at(b);
        if (!n) break;
        b += n;
      }
    }
    if (right) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        if (strip_at(start) != e - start) break;
        e = start;
      }
    }
    return s.substr(b, e - b);
  }
  if (left) {
    while (b < e) {
      size_t n = space_len_at(s, b);
      if (!n) break;
      b += n;
    }
  }
  if (right) {
    while (e > b) {
      size_t n = space_len_before(s.substr(0, e), e);
      if (!n || e - n < b) break;
      e -= n;
    }
  }
  return s.substr(b, e - b);
}

std::vector<std::string_view> py_split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string_view> out;
  if (!sep) {
    size_t i = 0;
    while (true) {
      while (size_t n = space_len_at(s, i)) i += n;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(py_strip(s.substr(i), false, true, nullptr));
        break;
      }
      size_t j = i;
      while (j < s.size() && space_len_at(s, j) == 0) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
    size_t p = s.find(*sep, start);
    if (p == std::string_view::npos) break;
    out.emplace_back(s.substr(start, p - start));
    start = p + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string_view> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit);
  std::vector<std::string_view> out;
  if (!sep) {
    size_t end = s.size();
    while (true) {
      while (size_t n = space_len_before(s, end)) end -= n;
      if (end == 0) break;
      if (static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(py_strip(s.substr(0, end), true, false, nullptr));
        break;
      }
      size_t b = end;
      while (b > 0 && space_len_before(s, b) == 0) --b;
      out.emplace_back(s.substr(b, end - b));
      end = b;
    }
  } else {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t p = s.rfind(*sep, end - sep->size());
      if (p == std::string_view::npos) break;
      out.emplace_back(s.substr(p + sep->size(), end - p - sep->size()));
      end = p;
    }
    out.emplace_back(s.substr(0, end));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string_view> py_splitlines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1e')) {
      out.emplace_back(s.substr(start, i - start));
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    } else if (s.substr(i, 2) == "\xC2\x85" || s.substr(i, 3) == "\xE2\x80\xA8" || s.substr(i, 3) == "\xE2\x80\xA9") {
      // NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR also end lines in Python.
      out.emplace_back(s.substr(start, i - start));
      i += s[i] == '\xC2' ? 1 : 2;
      start = i + 1;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::vector<size_t> py_replace_positions(std::string_view s, std::string_view old_text, int64_t count) {
  std::vector<size_t> at;
  if (old_text.empty()) {
    // Python inserts `new` before every character and at the end.
    for (size_t i = 0; count < 0 || static_cast<int64_t>(at.size()) < count; ++i) {
      if (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
      at.push_back(i);
      if (i >= s.size()) break;
    }
    return at;
  }
  for (size_t p = s.find(old_text); p != std::string_view::npos && (count < 0 || static_cast<int64_t>(at.size()) < count);
       p = s.find(old_text, p + old_text.size())) {
    at.push_back(p);
  }
  return at;
}

namespace {

// Simple (one-to-one) case mapping for the scripts chat text commonly uses:
// ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic. Other code points map
// to themselves.
uint32_t cp_upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x100 && c <= 0x17F) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (c == 0x138 || c == 0x149) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 0x20;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3AC && c <= 0x3AF) return c == 0x3AC ? 0x386 : c - 0x25;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

uint32_t cp_lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x130) return 'i';
    if (c == 0x138 || c == 0x149 || c == 0x17F) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

// Applies `map` to each code point; invalid UTF-8 bytes pass through.
template <typename Map>
std::string map_code_points(std::string_view s, Map map) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out += s[i++];
      continue;
    }
    uint32_t cp = len == 1 ? b : (b & (0x7F >> len));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (len == 1) {
      out += static_cast<char>(map(cp));
    } else {
      append_utf8(map(cp), &out);
    }
    i += len;
  }
  return out;
}

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(0xDC00 + b);  // lone byte: kept as a surrogate escape, re-encoded as itself
      ++i;
      continue;
    }
    uint32_t cp = len == 1 ? b : (b & (0x7F >> len));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

// One code point back to UTF-8 (a surrogate escape back to its lone byte).
void put(std::string& out, uint32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out += static_cast<char>(c - 0xDC00);
  } else {
    append_utf8(c, &out);
  }
}

// Upper and title case of one code point: German sharp s becomes "SS" / "Ss"
// in Python, the one multi-letter mapping chat text meets.
void put_upper(std::string& out, uint32_t c) {
  if (c == 0xDF) {
    out += "SS";
  } else {
    put(out, cp_upper(c));
  }
}

void put_title(std::string& out, uint32_t c) {
  if (c == 0xDF) {
    out += "Ss";
  } else {
    put(out, cp_upper(c));
  }
}

bool is_cased(uint32_t c) { return cp_upper(c) != c || cp_lower(c) != c || c == 0xDF; }

}  // namespace

std::string py_upper(std::string_view s) {
  std::string out = map_code_points(s, cp_upper);
  // German sharp s upper-cases to "SS" in Python.
  for (size_t p = out.find("\xC3\x9F"); p != std::string::npos; p = out.find("\xC3\x9F", p + 2)) out.replace(p, 2, "SS");
  return out;
}

std::string py_lower(std::string_view s) { return map_code_points(s, cp_lower); }

std::string py_capitalize(std::string_view s) {
  std::vector<uint32_t> cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) put_title(out, cps[i]);
    else put(out, cp_lower(cps[i]));
  }
  return out;
}

std::string py_title(std::string_view s) {
  // An upper-case letter may only follow an uncased character.
  std::string out;
  bool prev_cased = false;
  for (uint32_t c : decode(s)) {
    bool cased = is_cased(c);
    if (!cased) put(out, c);
    else if (prev_cased) put(out, cp_lower(c));
    else put_title(out, c);
    prev_cased = cased;
  }
  return out;
}

std::string jinja_title(std::string_view s) {
  // Words start after '-', whitespace or an opening bracket; their first
  // character is upper-cased (str.upper, so "ß" becomes "SS").
  std::string out;
  bool word_start = true;
  for (uint32_t c : decode(s)) {
    bool sep = c == '-' || cp_isspace(c) || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      put(out, c);
      word_start = true;
    } else {
      if (word_start) put_upper(out, c);
      else put(out, cp_lower(c));
      word_start = false;
    }
  }
  return out;
}

namespace {

// Letters Python's str.isalpha accepts, for the scripts chat text commonly
// uses: cased letters, Latin Extended-B, and the uncased letters of Hebrew,
// Arabic, Devanagari, Thai, kana, CJK ideographs and Hangul.
bool cp_isalpha(uint32_t c) {
  if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
  if (is_cased(c) || (c >= 0x180 && c <= 0x24F)) return true;
  return c == 0xAA || c == 0xBA || (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) ||
         (c >= 0x904 && c <= 0x939) || (c >= 0xE01 && c <= 0xE30) || (c >= 0x3041 && c <= 0x3096) ||
         (c >= 0x30A1 && c <= 0x30FA) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF);
}

// Digits str.isdigit accepts: ASCII, superscripts 1-3, Arabic-Indic,
// Devanagari and fullwidth digits.
bool cp_isdigit(uint32_t c) {
  return (c >= '0' && c <= '9') || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x660 && c <= 0x669) ||
         (c >= 0x966 && c <= 0x96F) || (c >= 0xFF10 && c <= 0xFF19);
}

}  // namespace

bool py_str_is(std::string_view s, std::string_view what) {
  std::vector<uint32_t> cps = decode(s);
  if (cps.empty()) return false;
  if (what == "islower" || what == "isupper") {
    bool any_cased = false;
    for (uint32_t c : cps) {
      if (!is_cased(c)) continue;
      any_cased = true;
      const bool lower = cp_upper(c) != c || c == 0xDF;
      if (lower != (what == "islower")) return false;
    }
    return any_cased;
  }
  for (uint32_t c : cps) {
    bool ok = what == "isspace"   ? cp_isspace(c)
              : what == "isdigit" ? cp_isdigit(c)
              : what == "isalpha" ? cp_isalpha(c)
                                  : cp_isalpha(c) || cp_isdigit(c);  // isalnum
    if (!ok) return false;
  }
  return true;
}

size_t py_count_words(std::string_view s) {
  size_t n = 0;
  bool in_word = false;
  for (uint32_t c : decode(s)) {
    bool word = c == '_' || cp_isalpha(c) || cp_isdigit(c);
    n += word && !in_word;
    in_word = word;
  }
  return n;
}

}  // namespace ladder::jinja
