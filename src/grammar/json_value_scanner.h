// JsonValueScanner: where one JSON value ends in a stream of bytes, found
// byte by byte without building the value (for streaming tool-call
// arguments). Brackets must match and strings are skipped whole; the scalars
// inside are not checked.
#pragma once

#include <string>

namespace ladder::grammar {

class JsonValueScanner {
 public:
  enum class Step {
    kMore,       // the byte is part of the value, which goes on
    kEnd,        // the byte completed the value
    kEndBefore,  // the value (a number or true/false/null) ended before this byte, which is not part of it
    kError,      // not a JSON value
  };

  // The first byte must start the value (no leading whitespace).
  Step feed(char c);

  // '{', '[', '"', or 's' (a scalar); 0 before the first byte.
  char kind() const { return kind_; }

 private:
  char kind_ = 0;
  std::string open_;  // unclosed brackets
  bool in_string_ = false;
  bool escape_ = false;
};

}  // namespace ladder::grammar
