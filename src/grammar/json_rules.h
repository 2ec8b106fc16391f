// The GBNF rules every JSON grammar shares, added to a GbnfBuilder on first
// use: whitespace, strings, numbers, any value, and the string formats and
// integer ranges of JSON Schema.
//
// Whitespace between JSON tokens is bounded: at most one space, or one
// newline followed by at most 20 spaces/tabs (enough to pretty-print), so a
// model cannot spend its tokens on whitespace. Numbers are bounded too (16
// integer digits, 16 fraction digits, 2 exponent digits); strings use only
// valid escapes (a \u escape of a surrogate only as a high-low pair), so the
// text always parses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "grammar/gbnf_builder.h"

namespace ladder::grammar::json_rules {

inline constexpr int64_t kMaxIntegerDigits = 16;

// Each returns the rule's name, defining it (and what it uses) first.
std::string ws(GbnfBuilder* b);
std::string character(GbnfBuilder* b);  // one character inside a string (escaped or not)
std::string string(GbnfBuilder* b);     // "..." with any content
std::string number(GbnfBuilder* b);
std::string integer(GbnfBuilder* b);
std::string boolean(GbnfBuilder* b);
std::string null(GbnfBuilder* b);
std::string value(GbnfBuilder* b);   // any JSON value
std::string object(GbnfBuilder* b);  // any JSON object
std::string array(GbnfBuilder* b);   // any JSON array

// An expression matching the integers in [lo, hi] (a missing bound: the
// integer grammar's own limit, kMaxIntegerDigits digits), written without
// leading zeros. kInvalidArgument when the range is empty.
Result<std::string> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// An expression for the contents (between the quotes) of a string in the
// given format: date, time, date-time (RFC 3339, real calendar days, leap
// years included), uuid, email, ipv4. kUnimplemented for any other format.
Result<std::string> string_format(std::string_view format, GbnfBuilder* b);

}  // namespace ladder::grammar::json_rules
