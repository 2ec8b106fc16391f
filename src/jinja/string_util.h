// Python str operations on UTF-8 text (whitespace as str.isspace() sees it in
// the ASCII range; case mapping covers Latin, Greek and Cyrillic).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ladder::jinja {

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
// strip / split / rsplit / splitlines return views into `s`, so that the
// caller can keep the marks of the bytes it takes (text_ops.h).
std::string_view py_strip(std::string_view s, bool left, bool right, const std::string* chars);
std::vector<std::string_view> py_split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string_view> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string_view> py_splitlines(std::string_view s);
// Where str.replace(old, new, count) puts `new`: the offsets of the replaced
// occurrences of `old` (for an empty `old`, the character boundaries).
std::vector<size_t> py_replace_positions(std::string_view s, std::string_view old_text, int64_t count);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);   // str.title()
std::string jinja_title(std::string_view s);  // the `title` filter (splits on -, whitespace, brackets)
// str.islower / isupper / isspace / isdigit / isalpha / isalnum (`what` names
// the method) over UTF-8, for the scripts listed in string_util.cc.
bool py_str_is(std::string_view s, std::string_view what);
// The number of \w+ runs (the `wordcount` filter).
size_t py_count_words(std::string_view s);

}  // namespace ladder::jinja
