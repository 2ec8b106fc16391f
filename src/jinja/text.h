// Text: a string that remembers which of its bytes came from data. A
// template's own literals are "template" text; strings the caller passes in
// the render context as data (a chat request's messages, tools, kwargs) are
// "data" text, and everything computed from them stays data: concatenation,
// slicing, strip, split, replace, join, format, tojson and the rest carry the
// marks through, byte for byte where the operation keeps bytes in place
// (see text_ops.h). A render returns a Text, so a tokenizer can recognise
// special-token markers only where the template wrote them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ladder::jinja {

// [begin, end) in bytes.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const ByteRange&) const = default;
};

enum class Origin : uint8_t { kTemplate, kData };

class Text {
 public:
  Text() = default;
  explicit Text(std::string bytes, Origin origin = Origin::kTemplate);

  const std::string& bytes() const { return bytes_; }
  // The data ranges: sorted, non-empty, neither overlapping nor touching.
  const std::vector<ByteRange>& data() const { return data_; }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  bool has_data() const { return !data_.empty(); }

  // Bytes [pos, pos + len) with their marks (len clipped to the end).
  Text substr(size_t pos, size_t len = std::string::npos) const;
  // The bytes a view into bytes() covers, with their marks.
  Text sub(std::string_view within) const {
    return within.empty() ? Text() : substr(static_cast<size_t>(within.data() - bytes_.data()), within.size());
  }

  // Calls fn(std::string_view piece, Origin origin) for each maximal run of
  // one origin, in order.
  template <typename Fn>
  void for_each_piece(Fn&& fn) const {
    size_t at = 0;
    for (const ByteRange& r : data_) {
      if (r.begin > at) fn(std::string_view(bytes_).substr(at, r.begin - at), Origin::kTemplate);
      fn(std::string_view(bytes_).substr(r.begin, r.end - r.begin), Origin::kData);
      at = r.end;
    }
    if (at < bytes_.size()) fn(std::string_view(bytes_).substr(at), Origin::kTemplate);
  }

 private:
  friend class TextBuilder;
  std::string bytes_;
  std::vector<ByteRange> data_;
};

// Builds a Text by appending pieces; adjacent data ranges merge.
class TextBuilder {
 public:
  void append(std::string_view s, Origin origin = Origin::kTemplate);
  void append(const Text& t) { append(t, 0, t.size()); }
  // Bytes [pos, pos + len) of t with their marks.
  void append(const Text& t, size_t pos, size_t len);
  void append(char c, Origin origin = Origin::kTemplate) { append(std::string_view(&c, 1), origin); }
  size_t size() const { return text_.bytes_.size(); }
  const std::string& bytes() const { return text_.bytes_; }
  Text take() { return std::move(text_); }

 private:
  void mark(size_t begin, size_t end);
  Text text_;
};

// The result of an operation that cannot tell which output bytes come from
// which input bytes: all data when any input has data.
Text derived_text(std::string bytes, std::initializer_list<const Text*> inputs);

// A transformation that maps each piece independently (escaping): applied to
// each run of one origin, so the marks stay exact.
template <typename Fn>
Text map_pieces(const Text& t, Fn&& fn) {
  TextBuilder b;
  t.for_each_piece([&](std::string_view piece, Origin origin) { b.append(fn(piece), origin); });
  return b.take();
}

// A transformation that may look across piece boundaries (case mapping of a
// word): applied to the whole string; the marks stay exact when mapping each
// piece alone gives the same bytes, else the whole result is data (if any
// input byte was).
template <typename Fn>
Text map_whole(const Text& t, Fn&& fn) {
  std::string whole = fn(std::string_view(t.bytes()));
  if (!t.has_data()) return Text(std::move(whole));
  Text piecewise = map_pieces(t, fn);
  if (piecewise.bytes() == whole) return piecewise;
  return Text(std::move(whole), Origin::kData);
}

}  // namespace ladder::jinja
