// parse_gbnf: a recursive-descent reader of the notation described in
// grammar.h. Rule references may come before the rule's definition; they are
// resolved by name at the end, and an undefined one is reported where it was
// first used.
#include <charconv>
#include <cstdio>
#include <unordered_map>

#include "grammar/grammar.h"
#include "common/utf8.h"

namespace ladder::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Result<Grammar> parse(std::string_view root_name) {
    skip_space(true);
    while (!at_end()) {
      LADDER_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    for (size_t i = 0; i < grammar_.rules.size(); ++i) {
      if (!defined_[i])
        return error_at(first_use_[i], "rule '" + grammar_.rules[i].name + "' is not defined");
    }
    grammar_.root = grammar_.find(root_name);
    if (grammar_.root < 0) {
      return invalid_argument("gbnf: no rule named '" + std::string(root_name) + "' (the start rule)");
    }
    return std::move(grammar_);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  Status error_at(size_t pos, const std::string& msg) const {
    int line = 1;
    int column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return invalid_argument("gbnf line " + std::to_string(line) + ", column " + std::to_string(column) +
                            ": " + msg);
  }

  std::string describe_here() const {
    if (at_end()) return "end of input";
    char c = peek();
    if (c == '\n') return "end of line";
    if (static_cast<unsigned char>(c) < 0x20) return "a control character";
    return "'" + std::string(1, c) + "'";
  }

  // Spaces, tabs and comments; newlines too when newline_ok.
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else if (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        ++pos_;  // a CRLF line end reads as its LF
      } else {
        break;
      }
    }
  }

  int32_t rule_index(const std::string& name, size_t use_pos) {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    int32_t id = static_cast<int32_t>(grammar_.rules.size());
    grammar_.rules.push_back({name, Expr()});
    defined_.push_back(false);
    first_use_.push_back(use_pos);
    index_.emplace(name, id);
    return id;
  }

  Status nesting_error() const {
    return error_at(pos_, "groups and repetitions nest more than " + std::to_string(kMaxNesting) +
                              " deep (split the rule into named rules)");
  }

  std::string parse_name() {
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    size_t name_pos = pos_;
    std::string name = parse_name();
    if (name.empty()) return error_at(pos_, "expected a rule name, found " + describe_here());
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      return error_at(pos_, "expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    int32_t id = rule_index(name, name_pos);
    if (defined_[id]) return error_at(name_pos, "rule '" + name + "' is defined twice");
    defined_[id] = true;
    first_use_[id] = name_pos;
    Expr body;
    LADDER_RETURN_IF_ERROR(parse_alternatives(false, &body));
    grammar_.rules[id].body = std::move(body);
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') {
      return error_at(pos_, "expected the end of rule '" + name + "', found " + describe_here());
    }
    return Status::ok();
  }

  Status parse_alternatives(bool nested, Expr* out) {
    std::vector<Expr> alts;
    Expr first;
    LADDER_RETURN_IF_ERROR(parse_sequence(nested, &first));
    alts.push_back(std::move(first));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      Expr next;
      LADDER_RETURN_IF_ERROR(parse_sequence(nested, &next));
      alts.push_back(std::move(next));
    }
    *out = Expr::alternation(std::move(alts));
    return Status::ok();
  }

  Status parse_sequence(bool nested, Expr* out) {
    std::vector<Expr> parts;
    for (;;) {
      skip_space(nested);
      char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') break;
      Expr element;
      LADDER_RETURN_IF_ERROR(parse_element(&element));
      for (int wraps = 0;; ++wraps) {
        if (depth_ + wraps > kMaxNesting) return nesting_error();
        skip_space(nested);
        c = peek();
        if (c == '*') {
          element = Expr::repeat(std::move(element), 0, kUnbounded);
        } else if (c == '+') {
          element = Expr::repeat(std::move(element), 1, kUnbounded);
        } else if (c == '?') {
          element = Expr::repeat(std::move(element), 0, 1);
        } else if (c == '{') {
          int32_t min = 0;
          int32_t max = 0;
          LADDER_RETURN_IF_ERROR(parse_braces(&min, &max));
          element = Expr::repeat(std::move(element), min, max);
          continue;  // parse_braces consumed the '}'
        } else {
          break;
        }
        ++pos_;
      }
      parts.push_back(std::move(element));
    }
    if (parts.empty()) {
      *out = Expr::sequence({});
      // An empty alternative is fine; a ')' right after '(' too. Anything else
      // that stopped us is reported by the caller.
    } else {
      *out = Expr::sequence(std::move(parts));
    }
    if (!nested && peek() == ')') return error_at(pos_, "unmatched ')'");
    return Status::ok();
  }

  Status parse_int(int32_t* out) {
    size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    if (start == pos_) return error_at(pos_, "expected a number in '{m,n}', found " + describe_here());
    int64_t v = 0;
    auto res = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (res.ec != std::errc() || v > kMaxRepeatCount) {
      return error_at(start, "repetition count above the limit of " + std::to_string(kMaxRepeatCount));
    }
    *out = static_cast<int32_t>(v);
    return Status::ok();
  }

  // {m} {m,} {m,n}
  Status parse_braces(int32_t* min, int32_t* max) {
    size_t open = pos_;
    ++pos_;
    skip_space(true);
    LADDER_RETURN_IF_ERROR(parse_int(min));
    skip_space(true);
    if (peek() == ',') {
      ++pos_;
      skip_space(true);
      if (peek() == '}') {
        *max = kUnbounded;
      } else {
        LADDER_RETURN_IF_ERROR(parse_int(max));
        skip_space(true);
      }
    } else {
      *max = *min;
    }
    if (peek() != '}')
      return error_at(pos_, "expected '}' to close the repetition, found " + describe_here());
    ++pos_;
    if (*max != kUnbounded && *max < *min) {
      return error_at(open,
                      "repetition {" + std::to_string(*min) + "," + std::to_string(*max) + "} has max < min");
    }
    return Status::ok();
  }

  Status parse_element(Expr* out) {
    size_t start = pos_;
    char c = peek();
    if (c == '"') {
      std::string bytes;
      LADDER_RETURN_IF_ERROR(parse_string(&bytes));
      *out = Expr::literal(std::move(bytes));
      return Status::ok();
    }
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++pos_;
      *out = Expr::char_class({{0, kMaxCodepoint}});
      return Status::ok();
    }
    if (c == '(') {
      if (depth_ + 1 > kMaxNesting) return nesting_error();
      ++pos_;
      skip_space(true);
      ++depth_;
      const Status inner = parse_alternatives(true, out);
      --depth_;
      LADDER_RETURN_IF_ERROR(inner);
      if (peek() != ')') return error_at(pos_, "expected ')' to close the group, found " + describe_here());
      ++pos_;
      return Status::ok();
    }
    if (c == '<') {
      ++pos_;
      if (peek() != '"') return error_at(pos_, "expected '\"' after '<' (a token is written <\"text\">)");
      std::string token_text;
      LADDER_RETURN_IF_ERROR(parse_string(&token_text));
      if (token_text.empty()) return error_at(start, "a token reference needs the token's text");
      if (peek() != '>')
        return error_at(pos_, "expected '>' to close the token reference, found " + describe_here());
      ++pos_;
      *out = Expr::token(std::move(token_text));
      return Status::ok();
    }
    if (is_name_char(c)) {
      std::string name = parse_name();
      skip_space(false);
      if (text_.substr(pos_, 3) == "::=") {
        return error_at(start,
                        "rule '" + name + "' starts before the previous rule ended (missing newline?)");
      }
      *out = Expr::rule_ref(rule_index(name, start));
      return Status::ok();
    }
    return error_at(pos_, "unexpected " + describe_here());
  }

  // One character of a string or class: an escape or a UTF-8 character.
  Status parse_char(uint32_t* cp) {
    size_t start = pos_;
    if (at_end()) return error_at(pos_, "unexpected end of input");
    if (peek() != '\\') {
      Utf8Step step = utf8_step(text_, pos_);
      if (step.kind != Utf8Kind::kChar) return error_at(pos_, "invalid UTF-8 in the grammar text");
      *cp = step.codepoint;
      pos_ += step.length;
      return Status::ok();
    }
    ++pos_;
    char e = peek();
    ++pos_;
    int hex_digits = 0;
    switch (e) {
      case 'n': *cp = '\n'; return Status::ok();
      case 'r': *cp = '\r'; return Status::ok();
      case 't': *cp = '\t'; return Status::ok();
      case 'f': *cp = '\f'; return Status::ok();
      case 'v': *cp = '\v'; return Status::ok();
      case '0': *cp = 0; return Status::ok();
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
      case '.': *cp = static_cast<unsigned char>(e); return Status::ok();
      case 'x': hex_digits = 2; break;
      case 'u': hex_digits = 4; break;
      case 'U': hex_digits = 8; break;
      default:
        return error_at(
            start, std::string("unknown escape '\\") + (e == '\0' ? std::string() : std::string(1, e)) + "'");
    }
    uint32_t v = 0;
    for (int i = 0; i < hex_digits; ++i) {
      char h = peek();
      int d = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (d < 0)
        return error_at(pos_, "expected " + std::to_string(hex_digits) + " hex digits after '\\" + e + "'");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) {
      char hex[16];
      std::snprintf(hex, sizeof(hex), "U+%04X", v);
      return error_at(start, std::string("escape names ") + hex + ", which is not a Unicode scalar value");
    }
    *cp = v;
    return Status::ok();
  }

  Status parse_string(std::string* out) {
    size_t open = pos_;
    ++pos_;  // the opening quote
    for (;;) {
      if (at_end() || peek() == '\n') return error_at(open, "unterminated string");
      if (peek() == '"') {
        ++pos_;
        return Status::ok();
      }
      uint32_t cp = 0;
      LADDER_RETURN_IF_ERROR(parse_char(&cp));
      append_utf8(cp, out);
    }
  }

  Status parse_class(Expr* out) {
    size_t open = pos_;
    ++pos_;
    bool negate = false;
    if (peek() == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CodepointRange> ranges;
    for (;;) {
      if (at_end() || peek() == '\n') return error_at(open, "unterminated character class");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      size_t item = pos_;
      uint32_t lo = 0;
      LADDER_RETURN_IF_ERROR(parse_char(&lo));
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        LADDER_RETURN_IF_ERROR(parse_char(&hi));
        if (hi < lo) return error_at(item, "character range is reversed (its end comes before its start)");
      }
      ranges.push_back({lo, hi});
    }
    std::vector<CodepointRange> set = normalize_ranges(std::move(ranges));
    if (negate) set = complement_ranges(set);
    *out = Expr::char_class(std::move(set));
    return Status::ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open around pos_
  Grammar grammar_;
  std::vector<bool> defined_;      // [rules]
  std::vector<size_t> first_use_;  // [rules] where an error about the rule points
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, std::string_view root_name) {
  return GbnfParser(text).parse(root_name);
}

}  // namespace ladder::grammar
