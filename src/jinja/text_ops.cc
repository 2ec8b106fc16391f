#include "jinja/text_ops.h"

#include "jinja/string_util.h"

namespace ladder::jinja {
namespace {

std::vector<Text> pieces_of(const Text& s, const std::vector<std::string_view>& views) {
  std::vector<Text> out;
  out.reserve(views.size());
  for (std::string_view v : views) out.push_back(s.sub(v));
  return out;
}

}  // namespace

Text text_strip(const Text& s, bool left, bool right, const std::string* chars) {
  return s.sub(py_strip(s.bytes(), left, right, chars));
}

std::vector<Text> text_split(const Text& s, const std::string* sep, int64_t maxsplit) {
  return pieces_of(s, py_split(s.bytes(), sep, maxsplit));
}

std::vector<Text> text_rsplit(const Text& s, const std::string* sep, int64_t maxsplit) {
  return pieces_of(s, py_rsplit(s.bytes(), sep, maxsplit));
}

std::vector<Text> text_splitlines(const Text& s) { return pieces_of(s, py_splitlines(s.bytes())); }

Result<Text> text_replace(const Text& s, const Text& old_text, const Text& new_text, int64_t count) {
  std::vector<size_t> at = py_replace_positions(s.bytes(), old_text.bytes(), count);
  const uint64_t size = s.size() - at.size() * old_text.size() + uint64_t{at.size()} * new_text.size();
  if (size > kMaxBuiltStringBytes) {
    return out_of_range("replace: result would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
  }
  TextBuilder out;
  size_t kept = 0;
  for (size_t p : at) {
    out.append(s, kept, p - kept);
    out.append(new_text);
    kept = p + old_text.size();
  }
  out.append(s, kept, std::string::npos);
  return out.take();
}

std::vector<Text> text_chars(const Text& s) {
  std::vector<Text> out;
  const std::string& b = s.bytes();
  for (size_t i = 0; i < b.size();) {
    size_t j = i + 1;
    while (j < b.size() && (static_cast<unsigned char>(b[j]) & 0xC0) == 0x80) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

Text text_upper(const Text& s) {
  return map_whole(s, [](std::string_view v) { return py_upper(v); });
}
Text text_lower(const Text& s) {
  return map_whole(s, [](std::string_view v) { return py_lower(v); });
}
Text text_capitalize(const Text& s) {
  return map_whole(s, [](std::string_view v) { return py_capitalize(v); });
}
Text text_title(const Text& s) {
  return map_whole(s, [](std::string_view v) { return py_title(v); });
}
Text jinja_title_text(const Text& s) {
  return map_whole(s, [](std::string_view v) { return jinja_title(v); });
}

}  // namespace ladder::jinja
