#include "grammar/json_value_scanner.h"

namespace ladder::grammar {
namespace {

bool scalar_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
         c == '-';
}

}  // namespace

JsonValueScanner::Step JsonValueScanner::feed(char c) {
  if (kind_ == 0) {
    if (c == '{' || c == '[') {
      kind_ = c;
      open_.push_back(c);
      return Step::kMore;
    }
    if (c == '"') {
      kind_ = '"';
      in_string_ = true;
      return Step::kMore;
    }
    if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
      kind_ = 's';
      return Step::kMore;
    }
    return Step::kError;
  }
  if (kind_ == 's') return scalar_char(c) ? Step::kMore : Step::kEndBefore;
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (kind_ == '"') return Step::kEnd;
    }
    return Step::kMore;
  }
  if (open_.empty()) return Step::kError;  // fed past the end
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    open_.push_back(c);
  } else if (c == '}' || c == ']') {
    if (open_.back() != (c == '}' ? '{' : '[')) return Step::kError;
    open_.pop_back();
    if (open_.empty()) return Step::kEnd;
  }
  return Step::kMore;
}

}  // namespace ladder::grammar
