#include "ops/roofline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace ladder::ops {
namespace {

// Sanity bounds only (the figures depend on the machine and its load): a
// broken probe reports zero, infinity or NaN.
TEST(Roofline, ProbesEveryStrategyAtEveryThreadCount) {
  ThreadPool pool(2);
  const BandwidthResult bw = measure_memory_bandwidth(pool, size_t{64} << 20);
  EXPECT_EQ(bw.bytes, size_t{64} << 20);
  const auto strategies = candidate_stream_strategies();
  ASSERT_EQ(bw.reads.size(), 2 * strategies.size());
  double best = 0;
  for (int t : {1, 2}) {
    for (const StreamStrategy& s : strategies) {
      const auto it = std::find_if(bw.reads.begin(), bw.reads.end(),
                                   [&](const ReadProbe& p) { return p.threads == t && p.strategy == s; });
      ASSERT_NE(it, bw.reads.end()) << to_string(s) << " at " << t << " threads";
      EXPECT_GT(it->gbps, 0.1) << to_string(s);
      EXPECT_LT(it->gbps, 10000.0) << to_string(s);
      best = std::max(best, it->gbps);
    }
  }
  // The roofline is the best of them, never one kernel's habit.
  EXPECT_EQ(bw.read_gbps, best);
  EXPECT_EQ(bw.best.gbps, best);
  EXPECT_GT(bw.stream_read_gbps, 0.1);
  EXPECT_LT(bw.stream_read_gbps, 10000.0);
  EXPECT_GT(bw.triad_gbps, 0.1);
  EXPECT_LT(bw.triad_gbps, 10000.0);
}

// The probe's best strategy against the independent STREAM-style read,
// alternating one pass of each five times and taking the median ratio, so
// both sample the same moments of a shared machine. `ladder bench roofline`
// reports the 10% acceptance bound on its longer measurement; this bound is
// much wider, because on a busy 2-core machine the paired ratio has read
// 1.33-1.36 with other work running beside it. What it catches is a probe
// that measures a cache instead of memory (three times the check and more)
// or a broken check (a fraction of it).
TEST(Roofline, BestReadAgreesWithStreamStyleCheck) {
  ThreadPool pool(2);
  const size_t bytes = size_t{256} << 20;
  const BandwidthResult bw = measure_memory_bandwidth(pool, bytes);
  ASSERT_GE(bw.best.threads, 1);
  ASSERT_LE(bw.best.threads, pool.size());
  std::unique_ptr<ThreadPool> fewer;
  if (bw.best.threads < pool.size()) fewer = std::make_unique<ThreadPool>(bw.best.threads);
  ThreadPool& p = fewer ? *fewer : pool;
  std::vector<double> ratios;
  for (int i = 0; i < 5; ++i) {
    const double probe = measure_read_gbps(p, bw.best.strategy, bytes, 1);
    const double check = measure_stream_read_gbps(bw.best.threads, bytes, 1);
    ratios.push_back(probe / check);
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_GT(ratios[2], 0.6) << to_string(bw.best.strategy);
  EXPECT_LT(ratios[2], 2.0) << to_string(bw.best.strategy);
}

TEST(Roofline, ComputePeaksArePlausible) {
  ThreadPool pool(1);
  const ComputePeaks p = measure_compute_peaks(pool);
  EXPECT_GT(p.fma_gflops, 1.0);
  EXPECT_LT(p.fma_gflops, 100000.0);
  EXPECT_GE(p.int8_gmacs, 0.0);
  EXPECT_GE(p.best_int8_gmacs(), p.int8_gmacs);
  EXPECT_GE(p.best_int8_gmacs(), p.amx_int8_gmacs);
  if (p.int8_method != "none") {
    EXPECT_GT(p.int8_gmacs, 1.0);
  }
}

TEST(StreamStrategy, NamesRoundTrip) {
  for (const StreamStrategy& s : candidate_stream_strategies()) {
    const auto parsed = parse_stream_strategy(to_string(s));
    ASSERT_TRUE(parsed.is_ok()) << to_string(s);
    EXPECT_EQ(parsed.value(), s) << to_string(s);
  }
  EXPECT_EQ(to_string(StreamStrategy{}), "plain");
  EXPECT_EQ(to_string({Prefetch::kNta, 4096}), "NTA+4K");
  EXPECT_EQ(to_string({Prefetch::kT1, 512}), "T1+512");
  EXPECT_EQ(parse_stream_strategy("T0+1536").value(), (StreamStrategy{Prefetch::kT0, 1536}));
  for (const char* bad : {"", "T0", "T3+4K", "NTA+", "NTA+-4", "T0+4M", "plain+1K", "T0+4K7"}) {
    EXPECT_FALSE(parse_stream_strategy(bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace ladder::ops
