// Python str operations on UTF-8 text (whitespace as str.isspace() sees it in
// the ASCII range; case mapping covers Latin, Greek and Cyrillic).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ladder::chat {

bool py_isspace(char c);
// Python's str.isspace() over UTF-8: the byte length of the whitespace
// character starting at s[i] / ending just before s[end], or 0 if there is
// none there. Covers NBSP, U+2000..U+200A, U+3000 and the other Unicode spaces.
size_t space_len_at(std::string_view s, size_t i);
size_t space_len_before(std::string_view s, size_t end);
bool cp_isspace(uint32_t cp);
// Whether Python's repr() prints the code point as is (str.isprintable), for
// the ranges chat text meets: controls, Unicode spaces and format characters
// are not printable and get a \x / \u escape.
bool cp_isprintable(uint32_t cp);
std::string py_strip(std::string_view s, bool left, bool right, const std::string* chars);
std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s);
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);
// The size py_replace's result would have (to bound it before building it).
uint64_t py_replace_size(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);
// Largest string a filter or method may build.
inline constexpr uint64_t kMaxBuiltStringBytes = uint64_t{64} << 20;
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);   // str.title()
std::string jinja_title(std::string_view s);  // the `title` filter (splits on -, whitespace, brackets)

}  // namespace ladder::chat
