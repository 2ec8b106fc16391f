#include "ops/roofline.h"

#include <gtest/gtest.h>

#include "ops/roofline_report.h"

namespace ladder::ops {
namespace {

// Sanity bounds only (the figures depend on the machine and its load): a
// broken probe reports zero, infinity or NaN.
TEST(Roofline, ProbesReportPlausibleFigures) {
  ThreadPool pool(2);
  const BandwidthResult bw = measure_memory_bandwidth(pool, size_t{64} << 20);
  EXPECT_EQ(bw.bytes, size_t{64} << 20);
  EXPECT_GT(bw.read_gbps, 0.1);
  EXPECT_LT(bw.read_gbps, 10000.0);
  EXPECT_GT(bw.triad_gbps, 0.1);
  EXPECT_LT(bw.triad_gbps, 10000.0);
  const double gflops = measure_peak_gflops(pool);
  EXPECT_GT(gflops, 1.0);
  EXPECT_LT(gflops, 100000.0);
}

TEST(Roofline, TimesMatmulAndFormatsRatios) {
  ThreadPool pool(1);
  const double secs = time_matmul(pool, TensorType::kQ8_0, 256, 64, 1, 0.01, 0);
  EXPECT_GT(secs, 0.0);
  EXPECT_LT(secs, 1.0);
  RooflineReport r;
  r.target = "X";
  r.threads = 2;
  r.bandwidth.read_gbps = 10;
  r.peak_gflops = 100;
  r.gemv.push_back({TensorType::kQ8_0, true, 768, 2048, 100.0, 8.0, 80.0});
  r.gemm.push_back({512, 768, 768, 5.0, 60.0, 60.0});
  const std::string text = format_roofline(r);
  EXPECT_NE(text.find("Q8_0p"), std::string::npos) << text;
  EXPECT_NE(text.find("80.0% of read bandwidth"), std::string::npos) << text;
  EXPECT_NE(text.find("60.0% of FMA peak"), std::string::npos) << text;
}

}  // namespace
}  // namespace ladder::ops
