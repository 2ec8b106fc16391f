// CPU time of the calling thread, for budgets a thread keeps on itself.
#pragma once

#include <chrono>
#include <cstdint>

namespace ladder {

// Microseconds of CPU the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
int64_t thread_cpu_us();

// How long a thread that just used `used_us` of CPU rests to be busy at most
// `busy_fraction` (in (0, 1]) of the time: used x (1 - f) / f; zero at 1.
std::chrono::microseconds rest_for_busy_fraction(int64_t used_us, double busy_fraction);

}  // namespace ladder
