// The fitted K-quant quantizers (gguf/quantize.h), read back through the
// scalar dequantizer of quant.h: within the formats' error bounds, more
// accurate than the extremes-based reference quantizers, and safe on
// degenerate rows.
#include "gguf/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gguf/quant.h"

namespace ladder::gguf {
namespace {

std::vector<float> gaussian_rows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  // Regions of other magnitudes and signs, so scales and offsets vary.
  for (size_t i = 1024; i < 1536; ++i) x[i] *= 0.01f;
  for (size_t i = 2048; i < 2304; ++i) x[i] = std::fabs(x[i]) + 3.0f;
  for (size_t i = 2560; i < 2816; ++i) x[i] = -std::fabs(x[i]) - 2.0f;
  return x;
}

using Quantizer = Status (*)(TensorType, const float*, void*, size_t);

// Relative RMSE per 256-element region, worst and overall.
struct Errors {
  double worst_region = 0, overall = 0;
};

Errors round_trip(Quantizer quantize, TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(traits_of(type), x.size()));
  EXPECT_TRUE(quantize(type, x.data(), q.data(), x.size()).is_ok());
  std::vector<float> y(x.size());
  EXPECT_TRUE(dequantize_row(type, q.data(), y.data(), y.size()).is_ok());
  Errors e;
  double se_all = 0, ss_all = 0;
  for (size_t r = 0; r < x.size(); r += 256) {
    double se = 0, ss = 0;
    for (size_t i = r; i < r + 256; ++i) se += double(x[i] - y[i]) * (x[i] - y[i]), ss += double(x[i]) * x[i];
    e.worst_region = std::max(e.worst_region, std::sqrt(se / ss));
    se_all += se, ss_all += ss;
  }
  e.overall = std::sqrt(se_all / ss_all);
  return e;
}

struct FitCase {
  TensorType type;
  double max_region_rmse;  // the format's bound, as for the reference quantizers
  double max_ratio;        // fitted overall RMSE / reference overall RMSE
};

class Fitted : public ::testing::TestWithParam<FitCase> {};

TEST_P(Fitted, WithinBoundsAndMoreAccurateThanTheReference) {
  const FitCase c = GetParam();
  const auto x = gaussian_rows(256 * 64, 5);
  const Errors fitted = round_trip(quantize_row_fitted, c.type, x);
  const Errors reference = round_trip(quantize_row, c.type, x);
  std::printf("%-4s relative RMSE fitted %.4f, reference %.4f (ratio %.3f); worst region %.4f\n",
              std::string(tensor_type_name(c.type)).c_str(), fitted.overall, reference.overall,
              fitted.overall / reference.overall, fitted.worst_region);
  EXPECT_LE(fitted.worst_region, c.max_region_rmse);
  EXPECT_LE(fitted.overall, reference.overall * c.max_ratio);
}

INSTANTIATE_TEST_SUITE_P(KQuants, Fitted,
                         ::testing::Values(FitCase{TensorType::kQ4_K, 0.12, 0.92},
                                           FitCase{TensorType::kQ5_K, 0.06, 0.94},
                                           FitCase{TensorType::kQ6_K, 0.03, 0.92}),
                         [](const auto& p) { return std::string(tensor_type_name(p.param.type)); });

TEST(Fitted, DegenerateRows) {
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    std::vector<uint8_t> q(row_bytes(traits_of(t), 256));
    std::vector<float> y(256);
    for (float c : {0.0f, 1.5f, -2.25f}) {
      std::vector<float> x(256, c);
      ASSERT_TRUE(quantize_row_fitted(t, x.data(), q.data(), x.size()).is_ok());
      ASSERT_TRUE(dequantize_row(t, q.data(), y.data(), y.size()).is_ok());
      for (float v : y)
        EXPECT_NEAR(v, c, 2e-3 * std::fabs(c) + 1e-7) << tensor_type_name(t) << " constant " << c;
    }
    // Non-finite input: no crash, and the finite neighbours' blocks are intact.
    std::vector<float> x(512, 0.5f);
    x[3] = std::nanf(""), x[7] = INFINITY;
    std::vector<uint8_t> q2(row_bytes(traits_of(t), 512));
    std::vector<float> y2(512);
    ASSERT_TRUE(quantize_row_fitted(t, x.data(), q2.data(), x.size()).is_ok());
    ASSERT_TRUE(dequantize_row(t, q2.data(), y2.data(), y2.size()).is_ok());
    for (size_t i = 256; i < 512; ++i) EXPECT_NEAR(y2[i], 0.5f, 1e-3) << tensor_type_name(t);
  }
}

TEST(Fitted, OtherTypesAreTheReferenceQuantizers) {
  const auto x = gaussian_rows(4096, 9);
  for (TensorType t : {TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
                       TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1}) {
    std::vector<uint8_t> a(row_bytes(traits_of(t), x.size())), b(a.size());
    ASSERT_TRUE(quantize_row_fitted(t, x.data(), a.data(), x.size()).is_ok());
    ASSERT_TRUE(quantize_row(t, x.data(), b.data(), x.size()).is_ok());
    EXPECT_EQ(a, b) << tensor_type_name(t);
  }
  std::vector<uint8_t> q(1024);
  Status st = quantize_row_fitted(TensorType::kQ4_K, x.data(), q.data(), 100);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("256"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ladder::gguf
