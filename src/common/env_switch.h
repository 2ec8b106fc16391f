// On/off switches read from the environment (LADDER_AMX=0,
// LADDER_BF16_DOT=off, LADDER_AMX_BF16=1, ...): one vocabulary for all.
#pragma once

#include <cstdlib>
#include <string_view>

namespace ladder {

// Whether $name is set to 0, off, false or no.
inline bool env_switched_off(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "0" || s == "off" || s == "false" || s == "no";
}

// Whether $name is set to 1, on, true or yes.
inline bool env_switched_on(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "1" || s == "on" || s == "true" || s == "yes";
}

}  // namespace ladder
