// LADDER_CHECK: an always-on assertion for broken invariants (never for bad
// input: that gets a Status). Reports file:line and the message, then aborts.
#pragma once

#include <string_view>

namespace ladder::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, std::string_view msg);
}  // namespace ladder::detail

#define LADDER_CHECK(cond, msg)                                               \
  do {                                                                        \
    if (!(cond)) [[unlikely]] {                                               \
      ::ladder::detail::check_failed(__FILE__, __LINE__, #cond, (msg));       \
    }                                                                         \
  } while (0)
