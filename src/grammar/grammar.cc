#include "grammar/grammar.h"

#include <algorithm>

namespace ladder::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;

}  // namespace

std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges) {
  // Drop surrogates (not scalar values) by splitting ranges around them.
  std::vector<CodepointRange> split;
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodepoint) continue;
    r.hi = std::min(r.hi, kMaxCodepoint);
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      split.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) split.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) split.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(split.begin(), split.end(), [](const CodepointRange& a, const CodepointRange& b) {
    return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi);
  });
  std::vector<CodepointRange> out;
  for (const CodepointRange& r : split) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (const CodepointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return normalize_ranges(std::move(out));
}

Expr Expr::literal(std::string bytes) {
  Expr e;
  e.kind = Kind::kLiteral;
  e.text = std::move(bytes);
  return e;
}

Expr Expr::char_class(std::vector<CodepointRange> ranges) {
  Expr e;
  e.kind = Kind::kCharClass;
  e.ranges = normalize_ranges(std::move(ranges));
  return e;
}

Expr Expr::rule_ref(int32_t rule) {
  Expr e;
  e.kind = Kind::kRuleRef;
  e.rule = rule;
  return e;
}

Expr Expr::token(std::string text) {
  Expr e;
  e.kind = Kind::kToken;
  e.text = std::move(text);
  return e;
}

Expr Expr::sequence(std::vector<Expr> parts) {
  if (parts.size() == 1) return std::move(parts[0]);
  Expr e;
  e.kind = Kind::kSequence;
  e.children = std::move(parts);
  return e;
}

Expr Expr::alternation(std::vector<Expr> alternatives) {
  if (alternatives.size() == 1) return std::move(alternatives[0]);
  Expr e;
  e.kind = Kind::kAlternation;
  e.children = std::move(alternatives);
  return e;
}

Expr Expr::repeat(Expr body, int32_t min, int32_t max) {
  Expr e;
  e.kind = Kind::kRepeat;
  e.min = min;
  e.max = max;
  e.children.push_back(std::move(body));
  return e;
}

int32_t Grammar::find(std::string_view name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace ladder::grammar
