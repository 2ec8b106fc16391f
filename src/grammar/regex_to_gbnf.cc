#include "grammar/regex_to_gbnf.h"

#include <cstdio>
#include <vector>

#include "grammar/json_rules.h"
#include "common/utf8.h"

namespace ladder::grammar {
namespace {

using Ranges = std::vector<CodepointRange>;

Ranges digit_set() {
  return {{'0', '9'}};
}
Ranges word_set() {
  return normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
Ranges space_set() {
  // ECMAScript \s: WhiteSpace and LineTerminator.
  return normalize_ranges({{'\t', '\r'},
                           {' ', ' '},
                           {0xA0, 0xA0},
                           {0x1680, 0x1680},
                           {0x2000, 0x200A},
                           {0x2028, 0x2029},
                           {0x202F, 0x202F},
                           {0x205F, 0x205F},
                           {0x3000, 0x3000},
                           {0xFEFF, 0xFEFF}});
}
Ranges dot_set() {
  return complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view p) : p_(p) {}

  // Top level: alternatives, each with its own anchors.
  Status parse(std::vector<Expr>* branches, std::vector<std::pair<bool, bool>>* anchors) {
    for (;;) {
      Expr seq;
      bool start = false;
      bool end = false;
      LADDER_RETURN_IF_ERROR(parse_sequence(0, &seq, &start, &end));
      branches->push_back(std::move(seq));
      anchors->emplace_back(start, end);
      if (at_end()) return Status::ok();
      if (peek() == '|') {
        ++pos_;
        continue;
      }
      return error("unmatched ')'");
    }
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }

  // The pattern in quotes for a message; a long one by its first 80 bytes.
  std::string quoted() const {
    constexpr size_t kShown = 80;
    if (p_.size() <= kShown) return "'" + std::string(p_) + "'";
    return "'" + std::string(p_.substr(0, kShown)) + "...' (" + std::to_string(p_.size()) + " bytes)";
  }
  Status error(const std::string& msg) const {
    return invalid_argument("pattern " + quoted() + ", offset " + std::to_string(pos_) + ": " + msg);
  }
  // `what` at offset `at` (where the construct starts).
  Status unsupported_at(size_t at, const std::string& what) const {
    return Status(StatusCode::kUnimplemented,
                  "pattern " + quoted() + ", offset " + std::to_string(at) + ": " + what + " not supported");
  }
  Status unsupported(const std::string& what) const { return unsupported_at(pos_, what); }

  Status parse_alternation(int depth, Expr* out) {
    std::vector<Expr> alts;
    for (;;) {
      Expr seq;
      bool start = false;
      bool end = false;
      LADDER_RETURN_IF_ERROR(parse_sequence(depth, &seq, &start, &end));
      alts.push_back(std::move(seq));
      if (peek() != '|') break;
      ++pos_;
    }
    *out = Expr::alternation(std::move(alts));
    return Status::ok();
  }

  Status parse_sequence(int depth, Expr* out, bool* anchored_start, bool* anchored_end) {
    std::vector<Expr> parts;
    if (depth == 0 && peek() == '^') {
      *anchored_start = true;
      ++pos_;
    }
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (depth == 0 && (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|')) {
          *anchored_end = true;
          ++pos_;
          break;
        }
        return unsupported("'$' other than at the end of the pattern (or of a top-level alternative) is");
      }
      if (peek() == '^')
        return unsupported("'^' other than at the start of the pattern (or of a top-level alternative) is");
      Expr atom;
      LADDER_RETURN_IF_ERROR(parse_atom(depth, &atom));
      LADDER_RETURN_IF_ERROR(parse_quantifier(&atom));
      parts.push_back(std::move(atom));
    }
    *out = Expr::sequence(std::move(parts));
    return Status::ok();
  }

  // {n} {n,} {n,m} at pos_: true with the bounds, or false (then '{' is a literal).
  bool read_braces(int32_t* min, int32_t* max, size_t* end) const {
    size_t i = pos_ + 1;
    auto read_int = [&](int64_t* v) {
      size_t start = i;
      *v = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (p_[i] - '0'), int64_t{1} << 40);
        ++i;
      }
      return i > start;
    };
    int64_t a = 0;
    int64_t b = 0;
    if (!read_int(&a)) return false;
    if (i < p_.size() && p_[i] == '}') {
      b = a;
    } else if (i < p_.size() && p_[i] == ',') {
      ++i;
      if (i < p_.size() && p_[i] == '}') {
        b = -1;
      } else if (!read_int(&b) || i >= p_.size() || p_[i] != '}') {
        return false;
      }
    } else {
      return false;
    }
    *min = static_cast<int32_t>(std::min<int64_t>(a, INT32_MAX));
    *max = b < 0 ? kUnbounded : static_cast<int32_t>(std::min<int64_t>(b, INT32_MAX));
    *end = i + 1;
    return true;
  }

  Status parse_quantifier(Expr* atom) {
    for (bool first = true;; first = false) {
      int32_t min = 0;
      int32_t max = 0;
      size_t end = 0;
      char c = peek();
      if (c == '*' || c == '+' || c == '?') {
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : kUnbounded;
        end = pos_ + 1;
      } else if (c == '{' && read_braces(&min, &max, &end)) {
        if (max != kUnbounded && max < min) return error("quantifier {n,m} with m < n");
        if (min > kMaxRepeatCount || max > kMaxRepeatCount) {
          return unsupported("a repetition count above " + std::to_string(kMaxRepeatCount) + " is");
        }
      } else {
        return Status::ok();
      }
      if (!first) return error("nothing to repeat (a quantifier follows a quantifier)");
      pos_ = end;
      if (peek() == '?') ++pos_;  // lazy: the same strings
      *atom = Expr::repeat(std::move(*atom), min, max);
    }
  }

  Status parse_atom(int depth, Expr* out) {
    char c = peek();
    if (c == '(') {
      if (depth >= kMaxNesting) {
        return unsupported("groups nested more than " + std::to_string(kMaxNesting) + " deep are");
      }
      ++pos_;
      if (peek() == '?') {
        if (peek(1) == ':') {
          pos_ += 2;
        } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
          size_t close = p_.find('>', pos_);
          if (close == std::string_view::npos) return error("unterminated group name");
          pos_ = close + 1;
        } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
          return unsupported_at(pos_ - 1, "lookaround ((?=, (?!, (?<=, (?<!) is");
        } else {
          return unsupported_at(pos_ - 1, "this group syntax (inline flags such as (?i)) is");
        }
      }
      LADDER_RETURN_IF_ERROR(parse_alternation(depth + 1, out));
      if (peek() != ')') return error("missing ')'");
      ++pos_;
      return Status::ok();
    }
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++pos_;
      *out = Expr::char_class(dot_set());
      return Status::ok();
    }
    if (c == '*' || c == '+' || c == '?') return error("nothing to repeat");
    if (c == '{') {
      int32_t a = 0;
      int32_t b = 0;
      size_t e = 0;
      if (read_braces(&a, &b, &e)) return error("nothing to repeat");
    }
    if (c == '\\') {
      Ranges set;
      LADDER_RETURN_IF_ERROR(parse_escape(false, &set));
      *out = Expr::char_class(std::move(set));
      return Status::ok();
    }
    uint32_t cp = 0;
    LADDER_RETURN_IF_ERROR(read_char(&cp));
    *out = Expr::char_class({{cp, cp}});
    return Status::ok();
  }

  Status read_char(uint32_t* cp) {
    Utf8Step step = utf8_step(p_, pos_);
    if (step.kind != Utf8Kind::kChar) return error("invalid UTF-8");
    *cp = step.codepoint;
    pos_ += step.length;
    return Status::ok();
  }

  Status read_hex(size_t n, uint32_t* v) {
    *v = 0;
    for (size_t i = 0; i < n; ++i) {
      char h = peek();
      int d = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (d < 0) return error("expected a hex digit");
      *v = *v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return Status::ok();
  }

  // \uHHHH (a surrogate pair written as two), or \u{H...}.
  Status read_unicode_escape(uint32_t* cp) {
    if (peek() == '{') {
      ++pos_;
      uint32_t v = 0;
      size_t digits = 0;
      while (peek() != '}') {
        uint32_t d = 0;
        LADDER_RETURN_IF_ERROR(read_hex(1, &d));
        v = v * 16 + d;
        if (++digits > 6) return error("\\u{...} out of range");
      }
      ++pos_;
      *cp = v;
    } else {
      LADDER_RETURN_IF_ERROR(read_hex(4, cp));
      if (*cp >= 0xD800 && *cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
        pos_ += 2;
        uint32_t low = 0;
        LADDER_RETURN_IF_ERROR(read_hex(4, &low));
        if (low < 0xDC00 || low > 0xDFFF) return error("a high surrogate must be followed by a low one");
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
      }
    }
    if (*cp > kMaxCodepoint || (*cp >= 0xD800 && *cp <= 0xDFFF))
      return error("escape is not a Unicode scalar value");
    return Status::ok();
  }

  // At a backslash. A class escape (\d...) yields its set; anything else one character.
  Status parse_escape(bool in_class, Ranges* set) {
    const size_t start = pos_;
    ++pos_;
    if (at_end()) return error("pattern ends with '\\'");
    char e = peek();
    ++pos_;
    uint32_t cp = 0;
    switch (e) {
      case 'd': *set = digit_set(); return Status::ok();
      case 'D': *set = complement_ranges(digit_set()); return Status::ok();
      case 'w': *set = word_set(); return Status::ok();
      case 'W': *set = complement_ranges(word_set()); return Status::ok();
      case 's': *set = space_set(); return Status::ok();
      case 'S': *set = complement_ranges(space_set()); return Status::ok();
      case 't': cp = '\t'; break;
      case 'n': cp = '\n'; break;
      case 'r': cp = '\r'; break;
      case 'f': cp = '\f'; break;
      case 'v': cp = '\v'; break;
      case '0':
        if (peek() >= '0' && peek() <= '9') return unsupported_at(start, "octal escapes are");
        cp = 0;
        break;
      case 'x': LADDER_RETURN_IF_ERROR(read_hex(2, &cp)); break;
      case 'u': LADDER_RETURN_IF_ERROR(read_unicode_escape(&cp)); break;
      case 'b':
        if (!in_class) return unsupported_at(start, "word boundaries (\\b, \\B) are");
        cp = 0x08;
        break;
      case 'B': return unsupported_at(start, "word boundaries (\\b, \\B) are");
      case 'p':
      case 'P': return unsupported_at(start, "Unicode property escapes (\\p{...}) are");
      case 'k': return unsupported_at(start, "backreferences are");
      case 'c': return unsupported_at(start, "control escapes (\\cX) are");
      default:
        if (e >= '1' && e <= '9') return unsupported_at(start, "backreferences are");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          return error(std::string("unknown escape '\\") + e + "'");
        }
        --pos_;
        LADDER_RETURN_IF_ERROR(read_char(&cp));
    }
    *set = {{cp, cp}};
    return Status::ok();
  }

  Status parse_class(Expr* out) {
    ++pos_;
    bool negate = false;
    if (peek() == '^') {
      negate = true;
      ++pos_;
    }
    Ranges all;
    bool first = true;
    for (;;) {
      if (at_end()) return error("unterminated character class");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      Ranges lo_set;
      if (peek() == '\\') {
        LADDER_RETURN_IF_ERROR(parse_escape(true, &lo_set));
      } else {
        uint32_t cp = 0;
        LADDER_RETURN_IF_ERROR(read_char(&cp));
        lo_set = {{cp, cp}};
      }
      const bool single = lo_set.size() == 1 && lo_set[0].lo == lo_set[0].hi;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {
        ++pos_;
        Ranges hi_set;
        if (peek() == '\\') {
          LADDER_RETURN_IF_ERROR(parse_escape(true, &hi_set));
        } else {
          uint32_t cp = 0;
          LADDER_RETURN_IF_ERROR(read_char(&cp));
          hi_set = {{cp, cp}};
        }
        if (!single || hi_set.size() != 1 || hi_set[0].lo != hi_set[0].hi) {
          return error("a class escape (\\d, \\w, \\s...) cannot bound a range");
        }
        if (hi_set[0].lo < lo_set[0].lo) return error("character range out of order");
        all.push_back({lo_set[0].lo, hi_set[0].lo});
        continue;
      }
      all.insert(all.end(), lo_set.begin(), lo_set.end());
    }
    Ranges set = normalize_ranges(std::move(all));
    if (negate) set = complement_ranges(set);
    *out = Expr::char_class(std::move(set));
    return Status::ok();
  }

  std::string_view p_;
  size_t pos_ = 0;
};

// The JSON text of one character from `set`: unescaped where JSON allows,
// escaped for ", \ and control characters.
Result<std::string> json_char_from(const Ranges& set) {
  std::vector<CodepointRange> raw;
  std::vector<std::string> alts;
  for (const CodepointRange& r : set) {
    uint32_t lo = r.lo;
    for (uint32_t cp = r.lo; cp <= r.hi && cp < 0x20; ++cp, ++lo) {
      char buf[8];
      switch (cp) {
        case '\b': alts.push_back(GbnfBuilder::literal("\\b")); break;
        case '\f': alts.push_back(GbnfBuilder::literal("\\f")); break;
        case '\n': alts.push_back(GbnfBuilder::literal("\\n")); break;
        case '\r': alts.push_back(GbnfBuilder::literal("\\r")); break;
        case '\t': alts.push_back(GbnfBuilder::literal("\\t")); break;
        default: std::snprintf(buf, sizeof(buf), "\\u%04x", cp); alts.push_back(GbnfBuilder::literal(buf));
      }
    }
    if (lo <= r.hi) raw.push_back({lo, r.hi});
  }
  for (const CodepointRange& r : raw) {
    if (r.lo <= '"' && '"' <= r.hi) alts.push_back(GbnfBuilder::literal("\\\""));
    if (r.lo <= '\\' && '\\' <= r.hi) alts.push_back(GbnfBuilder::literal("\\\\"));
  }
  // raw minus the characters that need escapes.
  const std::vector<CodepointRange> plain =
      complement_ranges(normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  std::vector<CodepointRange> unescaped;
  for (const CodepointRange& r : raw) {
    for (const CodepointRange& p : plain) {
      uint32_t lo = std::max(r.lo, p.lo);
      uint32_t hi = std::min(r.hi, p.hi);
      if (lo <= hi) unescaped.push_back({lo, hi});
    }
  }
  unescaped = normalize_ranges(std::move(unescaped));
  if (!unescaped.empty()) {
    if (unescaped.size() == 1 && unescaped[0].lo == unescaped[0].hi) {
      std::string s;
      append_utf8(unescaped[0].lo, &s);
      alts.insert(alts.begin(), GbnfBuilder::literal(s));
    } else {
      alts.insert(alts.begin(), GbnfBuilder::char_class(unescaped));
    }
  }
  if (alts.empty()) return invalid_argument("a character class matches nothing");
  return GbnfBuilder::alternation(alts);
}

// One character from `set` as raw text (a whole-output regex).
Result<std::string> raw_char_from(const Ranges& set) {
  const std::vector<CodepointRange> ranges = normalize_ranges(set);
  if (ranges.empty()) return invalid_argument("a character class matches nothing");
  if (ranges.size() == 1 && ranges[0].lo == ranges[0].hi) {
    std::string s;
    append_utf8(ranges[0].lo, &s);
    return GbnfBuilder::literal(s);
  }
  return GbnfBuilder::char_class(ranges);
}

// json: characters as a JSON string's text (escaped where JSON must);
// otherwise raw.
Result<std::string> emit(const Expr& e, bool json) {
  switch (e.kind) {
    case Expr::Kind::kCharClass: return json ? json_char_from(e.ranges) : raw_char_from(e.ranges);
    case Expr::Kind::kSequence: {
      if (e.children.empty()) return std::string("\"\"");
      std::string out;
      for (const Expr& c : e.children) {
        LADDER_ASSIGN_OR_RETURN(std::string part, emit(c, json));
        out += (out.empty() ? "" : " ") + part;
      }
      return out;
    }
    case Expr::Kind::kAlternation: {
      std::vector<std::string> alts;
      for (const Expr& c : e.children) {
        LADDER_ASSIGN_OR_RETURN(std::string part, emit(c, json));
        alts.push_back(part);
      }
      return GbnfBuilder::alternation(alts);
    }
    case Expr::Kind::kRepeat: {
      LADDER_ASSIGN_OR_RETURN(std::string body, emit(e.children[0], json));
      std::string q;
      if (e.min == 0 && e.max == kUnbounded) {
        q = "*";
      } else if (e.min == 1 && e.max == kUnbounded) {
        q = "+";
      } else if (e.min == 0 && e.max == 1) {
        q = "?";
      } else {
        q = "{" + std::to_string(e.min) +
            (e.max == e.min ? "" : "," + (e.max == kUnbounded ? "" : std::to_string(e.max))) + "}";
      }
      return "( " + body + " )" + q;
    }
    default: break;
  }
  return internal_error("regex: unexpected expression");
}

}  // namespace

Result<std::string> regex_to_json_content(std::string_view pattern, GbnfBuilder* builder) {
  std::vector<Expr> branches;
  std::vector<std::pair<bool, bool>> anchors;
  LADDER_RETURN_IF_ERROR(RegexParser(pattern).parse(&branches, &anchors));
  const std::string any = json_rules::character(builder) + "*";
  std::vector<std::string> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    Result<std::string> emitted = emit(branches[i], /*json=*/true);
    if (!emitted.is_ok()) {
      return Status(emitted.status().code(),
                    "pattern '" + std::string(pattern) + "': " + emitted.status().message());
    }
    const std::string& body = emitted.value();
    std::string alt = anchors[i].first ? body : any + " " + body;
    if (!anchors[i].second) alt += " " + any;
    alts.push_back(alt);
  }
  return "( " + GbnfBuilder::alternation(alts) + " )";
}

Result<std::string> regex_to_gbnf(std::string_view pattern) {
  std::vector<Expr> branches;
  std::vector<std::pair<bool, bool>> anchors;
  LADDER_RETURN_IF_ERROR(RegexParser(pattern).parse(&branches, &anchors));
  std::vector<std::string> alts;
  for (const Expr& branch : branches) {
    Result<std::string> emitted = emit(branch, /*json=*/false);
    if (!emitted.is_ok()) {
      return Status(emitted.status().code(), "regex '" + std::string(pattern) + "': " + emitted.status().message());
    }
    alts.push_back(*emitted);
  }
  GbnfBuilder b;
  return b.text(GbnfBuilder::alternation(alts));
}

}  // namespace ladder::grammar
