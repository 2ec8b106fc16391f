#include "grammar/json_rules.h"

#include <vector>

namespace ladder::grammar::json_rules {

std::string ws(GbnfBuilder* b) {
  return b->shared_rule("ws", R"(( " " | "\n" [ \t]{0,20} )?)");
}

std::string character(GbnfBuilder* b) {
  // Escapes: the short ones, and \u of a non-surrogate or of a high-low
  // surrogate pair (a lone surrogate is rejected by strict parsers).
  return b->shared_rule(
      "json-char",
      R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | )"
      R"([dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2} ) ))");
}

std::string string(GbnfBuilder* b) {
  return b->shared_rule("json-string", "\"\\\"\" " + character(b) + "* \"\\\"\"");
}

std::string number(GbnfBuilder* b) {
  return b->shared_rule(
      "json-number", R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)");
}

std::string integer(GbnfBuilder* b) {
  return b->shared_rule("json-integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))");
}

std::string boolean(GbnfBuilder* b) {
  return b->shared_rule("json-boolean", R"("true" | "false")");
}

std::string null(GbnfBuilder* b) {
  return b->shared_rule("json-null", R"("null")");
}

std::string value(GbnfBuilder* b) {
  if (b->has_rule("json-value")) return "json-value";
  b->shared_rule("json-value", "json-object | json-array | " + string(b) + " | " + number(b) + " | " +
                                   boolean(b) + " | " + null(b));
  object(b);
  array(b);
  return "json-value";
}

std::string object(GbnfBuilder* b) {
  if (b->has_rule("json-object")) return "json-object";
  const std::string w = ws(b);
  const std::string s = string(b);
  const std::string member = s + " " + w + " \":\" " + w + " json-value";
  b->shared_rule("json-object", "\"{\" " + w + " ( " + member + " ( " + w + " \",\" " + w + " " + member +
                                    " )* " + w + " )? \"}\"");
  value(b);
  return "json-object";
}

std::string array(GbnfBuilder* b) {
  if (b->has_rule("json-array")) return "json-array";
  const std::string w = ws(b);
  b->shared_rule("json-array",
                 "\"[\" " + w + " ( json-value ( " + w + " \",\" " + w + " json-value )* " + w + " )? \"]\"");
  value(b);
  return "json-array";
}

namespace {

constexpr int64_t kMaxMagnitude = 9'999'999'999'999'999;  // kMaxIntegerDigits nines

// Same-length decimal strings lo <= hi: the numbers between them, digit by digit.
std::string same_length_range(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "";
  if (lo == hi) return "\"" + lo + "\"";
  const size_t rest = lo.size() - 1;
  auto digits = [](char a, char b) {
    if (a == b) return "\"" + std::string(1, a) + "\"";
    return "[" + std::string(1, a) + "-" + std::string(1, b) + "]";
  };
  auto any_rest = [&]() { return rest == 0 ? std::string() : " [0-9]{" + std::to_string(rest) + "}"; };
  if (lo[0] == hi[0])
    return "\"" + std::string(1, lo[0]) + "\" " + same_length_range(lo.substr(1), hi.substr(1));
  const bool lo_rest_zero = lo.find_first_not_of('0', 1) == std::string::npos;
  const bool hi_rest_nine = hi.find_first_not_of('9', 1) == std::string::npos;
  std::vector<std::string> alts;
  char first_full = lo[0];
  if (!lo_rest_zero) {
    alts.push_back("\"" + std::string(1, lo[0]) + "\" ( " +
                   same_length_range(lo.substr(1), std::string(rest, '9')) + " )");
    first_full = static_cast<char>(lo[0] + 1);
  }
  char last_full = hi_rest_nine ? hi[0] : static_cast<char>(hi[0] - 1);
  if (first_full <= last_full) alts.push_back(digits(first_full, last_full) + any_rest());
  if (!hi_rest_nine) {
    alts.push_back("\"" + std::string(1, hi[0]) + "\" ( " +
                   same_length_range(std::string(rest, '0'), hi.substr(1)) + " )");
  }
  return GbnfBuilder::alternation(alts);
}

// Non-negative lo <= hi.
std::string natural_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  int64_t start = lo;
  int64_t pow10 = 1;
  for (int len = 1; len <= kMaxIntegerDigits && start <= hi; ++len) {
    const int64_t len_max = pow10 * 10 - 1;  // largest number with len digits
    if (start <= len_max) {
      const int64_t end = std::min(hi, len_max);
      std::string a = std::to_string(start);
      std::string z = std::to_string(end);
      alts.push_back(same_length_range(a, z));
      start = end + 1;
    }
    pow10 *= 10;
  }
  return GbnfBuilder::alternation(alts);
}

}  // namespace

Result<std::string> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  int64_t a = lo.value_or(-kMaxMagnitude);
  int64_t z = hi.value_or(kMaxMagnitude);
  a = std::max(a, -kMaxMagnitude);
  z = std::min(z, kMaxMagnitude);
  if (a > z) {
    return invalid_argument("no integer of at most " + std::to_string(kMaxIntegerDigits) +
                            " digits lies within minimum/maximum");
  }
  std::vector<std::string> alts;
  if (a < 0) alts.push_back("\"-\" " + natural_range(std::max<int64_t>(1, -z), -a));
  if (z >= 0) alts.push_back(natural_range(std::max<int64_t>(0, a), z));
  return GbnfBuilder::alternation(alts);
}

Result<std::string> string_format(std::string_view format, GbnfBuilder* b) {
  if (format == "date" || format == "date-time") {
    // Years 0001-9999; each month's real length; 29 February in leap years
    // only (divisible by 4, centuries by 400).
    const std::string leap_yy = R"(( [02468] [48] | [2468] "0" | [13579] [26] ))";
    b->shared_rule("json-date",
                   R"(( [1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9] ) "-" )"
                   R"(( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | )"
                   R"(( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | )"
                   R"("02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | )"
                   "( [0-9]{2} " +
                       leap_yy + " | " + leap_yy + " \"00\" ) \"-02-29\"");
  }
  if (format == "time" || format == "date-time") {
    b->shared_rule("json-time",
                   R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
                   R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))");
  }
  if (format == "date") return std::string("json-date");
  if (format == "time") return std::string("json-time");
  if (format == "date-time") return b->shared_rule("json-date-time", R"(json-date "T" json-time)");
  if (format == "uuid") {
    return b->shared_rule(
        "json-uuid",
        R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})");
  }
  if (format == "email") {
    // A practical address: dot-separated atoms, a domain of at least two labels.
    return b->shared_rule(
        "json-email",
        R"([A-Za-z0-9_%+-]{1,64} ( "." [A-Za-z0-9_%+-]{1,64} ){0,8} "@" )"
        R"([A-Za-z0-9] ( [A-Za-z0-9-]{0,61} [A-Za-z0-9] )? ( "." [A-Za-z0-9] ( [A-Za-z0-9-]{0,61} [A-Za-z0-9] )? ){1,8})");
  }
  if (format == "ipv4") {
    b->shared_rule("json-ipv4-octet",
                   R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])");
    return b->shared_rule("json-ipv4", R"(json-ipv4-octet ( "." json-ipv4-octet ){3})");
  }
  return Status(StatusCode::kUnimplemented, "format '" + std::string(format) +
                                                "' is not supported (supported: date, time, date-time, uuid, "
                                                "email, ipv4)");
}

}  // namespace ladder::grammar::json_rules
