#include "jinja/text.h"

#include <algorithm>

namespace ladder::jinja {

Text::Text(std::string bytes, Origin origin) : bytes_(std::move(bytes)) {
  if (origin == Origin::kData && !bytes_.empty()) data_.push_back({0, bytes_.size()});
}

Text Text::substr(size_t pos, size_t len) const {
  TextBuilder b;
  b.append(*this, pos, len);
  return b.take();
}

void TextBuilder::mark(size_t begin, size_t end) {
  if (begin >= end) return;
  std::vector<ByteRange>& d = text_.data_;
  if (!d.empty() && d.back().end >= begin) {
    d.back().end = std::max(d.back().end, end);
    return;
  }
  d.push_back({begin, end});
}

void TextBuilder::append(std::string_view s, Origin origin) {
  const size_t at = text_.bytes_.size();
  text_.bytes_.append(s);
  if (origin == Origin::kData) mark(at, at + s.size());
}

void TextBuilder::append(const Text& t, size_t pos, size_t len) {
  if (pos >= t.size()) return;
  const size_t end = len > t.size() - pos ? t.size() : pos + len;
  const size_t at = text_.bytes_.size();
  text_.bytes_.append(t.bytes_, pos, end - pos);
  // The first range that ends after pos; ranges are sorted.
  auto it = std::upper_bound(t.data_.begin(), t.data_.end(), pos,
                             [](size_t p, const ByteRange& r) { return p < r.end; });
  for (; it != t.data_.end() && it->begin < end; ++it) {
    mark(at + std::max(it->begin, pos) - pos, at + std::min(it->end, end) - pos);
  }
}

Text derived_text(std::string bytes, std::initializer_list<const Text*> inputs) {
  for (const Text* in : inputs) {
    if (in && in->has_data()) return Text(std::move(bytes), Origin::kData);
  }
  return Text(std::move(bytes));
}

}  // namespace ladder::jinja
