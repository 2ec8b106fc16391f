// CPU time of the calling thread, for budgets a thread keeps on itself.
#pragma once

#include <cstdint>

namespace ladder {

// Microseconds of CPU the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
int64_t thread_cpu_us();

}  // namespace ladder
