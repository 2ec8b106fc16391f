#include "common/cpu_time.h"

#include <gtest/gtest.h>

namespace ladder {
namespace {

TEST(CpuTime, RestKeepsTheBusyFraction) {
  // Busy 100 us then resting r: 100 / (100 + r) is the fraction.
  EXPECT_EQ(rest_for_busy_fraction(100, 0.25).count(), 300);
  EXPECT_EQ(rest_for_busy_fraction(100, 0.5).count(), 100);
  EXPECT_EQ(rest_for_busy_fraction(1000, 0.1).count(), 9000);
  EXPECT_EQ(rest_for_busy_fraction(100, 1.0).count(), 0);
  EXPECT_EQ(rest_for_busy_fraction(0, 0.25).count(), 0);
}

TEST(CpuTime, ThreadCpuGrowsWithWork) {
  const int64_t t0 = thread_cpu_us();
  volatile uint64_t x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + static_cast<uint64_t>(i);
  EXPECT_GT(thread_cpu_us(), t0);
}

}  // namespace
}  // namespace ladder
