#include "jinja/lexer.h"

#include <cstring>

#include "jinja/string_util.h"
#include "common/utf8.h"

namespace ladder::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python's str.rstrip(): Unicode whitespace too.
std::string rstrip_ws(const std::string& s) {
  size_t end = s.size();
  while (size_t n = space_len_before(s, end)) end -= n;
  return s.substr(0, end);
}

int count_lines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to && i < s.size(); ++i) n += s[i] == '\n';
  return n;
}

class Lexer {
 public:
  Lexer(std::string source, const LexOptions& options) : src_(std::move(source)), opt_(options) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t open = find_opener(pos_);
      if (open == std::string::npos) {
        emit_data(src_.substr(pos_));
        advance_to(src_.size());
        break;
      }
      std::string text = src_.substr(pos_, open - pos_);
      char kind = src_[open + 1];  // '{', '%' or '#'
      char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      size_t raw_body = kind == '%' ? match_raw_begin(open) : std::string::npos;
      text = apply_left_strip(std::move(text), sign, kind == '{', line_starting);
      emit_data(text);
      advance_to(open);
      if (raw_body != std::string::npos) {
        LADDER_RETURN_IF_ERROR(lex_raw(raw_body, line_starting));
        continue;
      }
      size_t inner = open + 2 + (sign ? 1 : 0);
      advance_to(inner);
      if (kind == '#') {
        LADDER_RETURN_IF_ERROR(lex_comment(line_starting));
      } else {
        LADDER_RETURN_IF_ERROR(lex_tag(kind == '%', line_starting));
      }
    }
    tokens_.push_back({TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_opener(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // `{% raw %}` / `{%- raw -%}`: returns where the raw body starts, or npos.
  size_t match_raw_begin(size_t open) const {
    size_t i = open + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return std::string::npos;
    i += 3;
    if (i < src_.size() && is_name_char(src_[i])) return std::string::npos;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (size_t n = space_len_at(src_, i)) i += n;
      return i;
    }
    if (src_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  // The text before a tag loses trailing whitespace for `-`, or (lstrip_blocks,
  // block and comment tags only) the indentation of the tag's own line.
  std::string apply_left_strip(std::string text, char sign, bool is_variable, bool line_starting) const {
    if (sign == '-') return rstrip_ws(text);
    if (sign == '+' || !opt_.lstrip_blocks || is_variable) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos > 0 || line_starting) {
      bool all_ws = l_pos < text.size();
      for (size_t i = l_pos; i < text.size() && all_ws;) {
        size_t n = space_len_at(text, i);
        all_ws = n > 0;
        i += n;
      }
      if (all_ws) text.resize(l_pos);
    }
    return text;
  }

  // After a closing `%}` / `#}`: trim_blocks eats one newline; `-` eats all
  // whitespace; `+` keeps everything. Returns whether the consumed text ended
  // a line (jinja2's "line_starting" for the next lstrip decision).
  bool consume_block_suffix(char sign, bool trim_newline) {
    if (sign == '-') {
      size_t i = pos_;
      while (size_t n = space_len_at(src_, i)) i += n;
      bool nl = i > pos_ && src_[i - 1] == '\n';
      advance_to(i);
      return nl;
    }
    if (sign == '\0' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
      return true;
    }
    return false;
  }

  Status lex_raw(size_t body_start, bool& line_starting) {
    advance_to(body_start);
    // Find `{%[-+]? \s* endraw \s* (-%}|+%}|%})`.
    for (size_t i = body_start; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%') continue;
      size_t j = i + 2;
      char sign = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) sign = src_[j++];
      while (j < src_.size() && is_space(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < src_.size() && is_space(src_[j])) ++j;
      char end_sign = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_sign = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) continue;
      std::string body = apply_left_strip(src_.substr(body_start, i - body_start), sign, false, line_starting);
      emit_data(body);
      advance_to(j + 2);
      line_starting = consume_block_suffix(end_sign, opt_.trim_blocks);
      return Status::ok();
    }
    return invalid_argument("template line " + std::to_string(line_) + ": unclosed {% raw %} block (missing {% endraw %})");
  }

  Status lex_comment(bool& line_starting) {
    int start_line = line_;
    size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) {
      return invalid_argument("template line " + std::to_string(start_line) + ": unclosed comment (missing #})");
    }
    char sign = '\0';
    if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    advance_to(close + 2);
    line_starting = consume_block_suffix(sign, opt_.trim_blocks);
    return Status::ok();
  }

  Status lex_tag(bool is_block, bool& line_starting) {
    int start_line = line_;
    tokens_.push_back({is_block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", line_});
    const char* close = is_block ? "%}" : "}}";
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        return invalid_argument("template line " + std::to_string(start_line) + ": unclosed tag (missing " + close + ")");
      }
      // The closing delimiter is tried before operators, so `-%}` is a strip sign.
      char sign = '\0';
      size_t at = pos_;
      if ((src_[at] == '-' || src_[at] == '+') && src_.compare(at + 1, 2, close) == 0) sign = src_[at++];
      if (src_.compare(at, 2, close) == 0) {
        tokens_.push_back({is_block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", line_});
        advance_to(at + 2);
        if (sign == '+' && !is_block) sign = '\0';
        line_starting = consume_block_suffix(sign, is_block && opt_.trim_blocks);
        return Status::ok();
      }
      LADDER_RETURN_IF_ERROR(lex_expression_token());
    }
  }

  Status lex_expression_token() {
    char c = src_[pos_];
    int line = line_;
    if (is_name_start(c)) {
      size_t e = pos_;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      tokens_.push_back({TokenType::kName, src_.substr(pos_, e - pos_), line});
      advance_to(e);
      return Status::ok();
    }
    if (is_digit(c)) return lex_number();
    if (c == '\'' || c == '"') return lex_string();
    static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                 "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "=", ";"};
    for (const char* op : kOps) {
      size_t n = std::strlen(op);
      if (src_.compare(pos_, n, op) == 0) {
        tokens_.push_back({TokenType::kOperator, op, line});
        advance_to(pos_ + n);
        return Status::ok();
      }
    }
    // Quote the whole UTF-8 character, so the message stays valid UTF-8.
    size_t len = 1;
    while (pos_ + len < src_.size() && len < 4 && (static_cast<unsigned char>(src_[pos_ + len]) & 0xC0) == 0x80) ++len;
    return invalid_argument("template line " + std::to_string(line) + ": unexpected character '" + src_.substr(pos_, len) +
                            "' in a tag");
  }

  Status lex_number() {
    size_t e = pos_;
    auto digits = [&](size_t& i) {
      while (i < src_.size() && (is_digit(src_[i]) || (src_[i] == '_' && i + 1 < src_.size() && is_digit(src_[i + 1])))) ++i;
    };
    digits(e);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      digits(e);
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && is_digit(src_[x])) {
        is_float = true;
        e = x;
        digits(e);
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back({is_float ? TokenType::kFloat : TokenType::kInt, text, line_});
    advance_to(e);
    return Status::ok();
  }

  Status lex_string() {
    char quote = src_[pos_];
    int line = line_;
    std::string out;
    size_t i = pos_ + 1;
    while (i < src_.size() && src_[i] != quote) {
      char c = src_[i];
      if (c != '\\' || i + 1 >= src_.size()) {
        out += c;
        ++i;
        continue;
      }
      char n = src_[i + 1];
      i += 2;
      switch (n) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          size_t len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          if (i + len > src_.size()) return invalid_argument("template line " + std::to_string(line) + ": truncated \\" + std::string(1, n) + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < len; ++k) {
            char h = src_[i + k];
            int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) return invalid_argument("template line " + std::to_string(line) + ": bad \\" + std::string(1, n) + " escape");
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          i += len;
          append_utf8(cp, &out);
          break;
        }
        default:  // Python keeps unknown escapes verbatim
          out += '\\';
          out += n;
      }
    }
    if (i >= src_.size()) return invalid_argument("template line " + std::to_string(line) + ": unterminated string literal");
    tokens_.push_back({TokenType::kString, out, line});
    advance_to(i + 1);
    return Status::ok();
  }

  void emit_data(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenType::kData, text, line_});
  }

  void advance_to(size_t p) {
    line_ += count_lines(src_, pos_, p);
    pos_ = p;
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(const std::string& source, const LexOptions& options) {
  // jinja2 normalises newlines to "\n" and drops one trailing newline.
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src), options).run();
}

}  // namespace ladder::jinja
