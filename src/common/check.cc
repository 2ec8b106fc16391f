#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace ladder::detail {

void check_failed(const char* file, int line, const char* cond, std::string_view msg) {
  std::fprintf(stderr, "LADDER_CHECK failed at %s:%d: %s: %.*s\n", file, line, cond,
               static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace ladder::detail
