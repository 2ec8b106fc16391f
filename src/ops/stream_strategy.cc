#include "ops/stream_strategy.h"

#include <charconv>

namespace ladder::ops {
namespace {

constexpr std::pair<Prefetch, std::string_view> kHintNames[] = {
    {Prefetch::kT0, "T0"}, {Prefetch::kT1, "T1"}, {Prefetch::kT2, "T2"}, {Prefetch::kNta, "NTA"}};

}  // namespace

std::string to_string(StreamStrategy s) {
  if (s.prefetch == Prefetch::kNone) return "plain";
  std::string out;
  for (const auto& [hint, name] : kHintNames) {
    if (hint == s.prefetch) out = std::string(name);
  }
  out += '+';
  if (s.distance > 0 && s.distance % 1024 == 0) return out + std::to_string(s.distance / 1024) + "K";
  return out + std::to_string(s.distance);
}

Result<StreamStrategy> parse_stream_strategy(std::string_view text) {
  if (text == "plain") return StreamStrategy{};
  const size_t plus = text.find('+');
  const auto bad = [&] {
    return invalid_argument(
        "stream strategy '" + std::string(text) +
        "': expected plain or HINT+BYTES (HINT T0, T1, T2 or NTA; BYTES like 4096 or 4K)");
  };
  if (plus == std::string_view::npos) return bad();
  StreamStrategy s;
  const std::string_view hint = text.substr(0, plus);
  bool known = false;
  for (const auto& [h, name] : kHintNames) {
    if (name == hint) s.prefetch = h, known = true;
  }
  std::string_view num = text.substr(plus + 1);
  int64_t scale = 1;
  if (!num.empty() && num.back() == 'K') scale = 1024, num.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (!known || ec != std::errc() || end != num.data() + num.size() || v <= 0 || v > (int64_t{1} << 20)) {
    return bad();
  }
  s.distance = v * scale;
  return s;
}

std::vector<StreamStrategy> candidate_stream_strategies() {
  std::vector<StreamStrategy> out = {StreamStrategy{}};
  for (Prefetch p : {Prefetch::kT0, Prefetch::kT1, Prefetch::kNta}) {
    for (int64_t kib : {1, 4, 16}) out.push_back({p, kib * 1024});
  }
  out.push_back({Prefetch::kT2, 4096});
  return out;
}

}  // namespace ladder::ops
