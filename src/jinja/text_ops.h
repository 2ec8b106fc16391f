// Python's str operations on marked Text (text.h): each keeps the marks of
// the bytes it keeps in place, and marks what it computes from data as data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "jinja/text.h"

namespace ladder::jinja {

// Largest string a filter or method may build.
inline constexpr uint64_t kMaxBuiltStringBytes = uint64_t{64} << 20;

Text text_strip(const Text& s, bool left, bool right, const std::string* chars);
std::vector<Text> text_split(const Text& s, const std::string* sep, int64_t maxsplit);
std::vector<Text> text_rsplit(const Text& s, const std::string* sep, int64_t maxsplit);
std::vector<Text> text_splitlines(const Text& s);
// str.replace(old, new, count): kept bytes keep their marks, each inserted
// `new` brings its own. Refused past kMaxBuiltStringBytes.
Result<Text> text_replace(const Text& s, const Text& old_text, const Text& new_text, int64_t count);
// The code points of s, one Text each.
std::vector<Text> text_chars(const Text& s);

Text text_upper(const Text& s);
Text text_lower(const Text& s);
Text text_capitalize(const Text& s);
Text text_title(const Text& s);   // str.title()
Text jinja_title_text(const Text& s);  // the `title` filter

}  // namespace ladder::jinja
