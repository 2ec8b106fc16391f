#include "perf/roofline_report.h"

#include <gtest/gtest.h>

namespace ladder::perf {
namespace {

TEST(RooflineReport, TimesMatmul) {
  ops::ThreadPool pool(1);
  const double secs = time_matmul(pool, TensorType::kQ8_0, 256, 64, 1, 0.01, 0);
  EXPECT_GT(secs, 0.0);
  EXPECT_LT(secs, 1.0);
}

TEST(RooflineReport, FormatsEveryStrategyAndDividesByTheBest) {
  RooflineReport r;
  r.target = "X";
  r.threads = 2;
  r.bandwidth.bytes = size_t{512} << 20;
  r.bandwidth.reads = {{{}, 1, 9.0},
                       {{}, 2, 18.0},
                       {{ops::Prefetch::kNta, 4096}, 1, 5.0},
                       {{ops::Prefetch::kNta, 4096}, 2, 10.0}};
  r.bandwidth.best = r.bandwidth.reads[1];
  r.bandwidth.read_gbps = 18.0;
  r.bandwidth.stream_read_gbps = 17.0;
  r.peaks.fma_gflops = 100;
  r.peaks.int8_gmacs = 200;
  r.peaks.int8_method = "AVX512-VNNI";
  r.peaks.amx_int8_gmacs = 900;
  r.gemv.push_back({TensorType::kQ8_0, true, 768, 2048, 100.0, 9.0, 50.0});
  r.gemm.push_back({TensorType::kF32, false, false, false, 512, 768, 768, 5.0, 60.0, 60.0});
  r.gemm.push_back({TensorType::kBF16, true, false, true, 512, 768, 768, 2.5, 120.0, 120.0});
  r.gemm.push_back({TensorType::kQ8_0, true, true, false, 512, 768, 768, 1.0, 450.0, 50.0});
  const std::string text = format_roofline(r);
  EXPECT_NE(text.find("plain"), std::string::npos) << text;
  EXPECT_NE(text.find("NTA+4K"), std::string::npos) << text;
  EXPECT_NE(text.find("best: plain at 2 threads, 18.0 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("best / check = 1.06 (within 10%)"), std::string::npos) << text;
  EXPECT_NE(text.find("AMX int8"), std::string::npos) << text;
  EXPECT_NE(text.find("Q8_0p"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0% of read roofline"), std::string::npos) << text;
  EXPECT_NE(text.find("FMA     768x768     5.00 ms     60.0 GFLOP/s   60.0% of F32 FMA peak"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("BF16p vdpbf16 768x768     2.50 ms    120.0 GFLOP/s  120.0% of F32 FMA peak"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("AMX"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0% of best int8 peak"), std::string::npos) << text;
}

TEST(RooflineReport, StreamAgreementBound) {
  ops::BandwidthResult b;
  b.read_gbps = 20;
  b.stream_read_gbps = 19;
  EXPECT_TRUE(probe_agrees_with_stream(b));
  b.stream_read_gbps = 17;  // 1.18
  EXPECT_FALSE(probe_agrees_with_stream(b));
  b.stream_read_gbps = 23;  // 0.87
  EXPECT_FALSE(probe_agrees_with_stream(b));
  b.stream_read_gbps = 0;
  EXPECT_FALSE(probe_agrees_with_stream(b));
}

}  // namespace
}  // namespace ladder::perf
