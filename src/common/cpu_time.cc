#include "common/cpu_time.h"

#include <time.h>

namespace ladder {

int64_t thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::chrono::microseconds rest_for_busy_fraction(int64_t used_us, double busy_fraction) {
  if (busy_fraction >= 1 || used_us <= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(
      static_cast<int64_t>(static_cast<double>(used_us) * (1 - busy_fraction) / busy_fraction));
}

}  // namespace ladder
