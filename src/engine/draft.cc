#include "engine/draft.h"

#include <fmt/format.h>

#include <charconv>

namespace ladder::engine {

std::string DraftSpec::to_string() const {
  switch (kind) {
    case Kind::kNone: return "off";
    case Kind::kNgram: return "ngram";
    case Kind::kDraftModel: return "draft:" + path;
    case Kind::kSelfQ4: return "self-q4";
    case Kind::kEarlyExit: return fmt::format("early-exit:{}", n_layers);
  }
  return "off";
}

Result<DraftSpec> parse_draft_spec(std::string_view value) {
  DraftSpec spec;
  if (value == "off" || value == "none") return spec;
  if (value == "ngram") {
    spec.kind = DraftSpec::Kind::kNgram;
    return spec;
  }
  if (value == "self-q4") {
    spec.kind = DraftSpec::Kind::kSelfQ4;
    return spec;
  }
  if (value.starts_with("draft:") && value.size() > 6) {
    spec.kind = DraftSpec::Kind::kDraftModel;
    spec.path = std::string(value.substr(6));
    return spec;
  }
  if (value.starts_with("early-exit:")) {
    const std::string_view n = value.substr(11);
    int64_t layers = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), layers);
    if (ec == std::errc() && end == n.data() + n.size() && layers >= 1) {
      spec.kind = DraftSpec::Kind::kEarlyExit;
      spec.n_layers = layers;
      return spec;
    }
    return invalid_argument(fmt::format("--spec early-exit:L needs a layer count L >= 1, got '{}'", n));
  }
  return invalid_argument(fmt::format("--spec must be ngram, draft:FILE, self-q4, early-exit:L or off, got '{}'",
                                      value));
}

}  // namespace ladder::engine
