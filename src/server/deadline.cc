#include "server/deadline.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace ladder::server {

bool valid_deadline_ms(double ms) { return ms > 0 && ms <= 1e9; }

std::optional<double> parse_deadline_ms(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double ms = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || errno != 0 || !valid_deadline_ms(ms)) return std::nullopt;
  return ms;
}

engine::Clock::time_point deadline_after(engine::Clock::time_point from, double ms) {
  return from + std::chrono::duration_cast<engine::Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

std::optional<double> remaining_ms(engine::Clock::time_point deadline) {
  if (deadline == engine::Clock::time_point::max()) return std::nullopt;
  return std::max(1.0, std::chrono::duration<double, std::milli>(deadline - engine::Clock::now()).count());
}

}  // namespace ladder::server
