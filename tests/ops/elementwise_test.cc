#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::for_each_target;
using testing::random_floats;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << "element " << i;
  }
}

TEST(Elementwise, TargetsIncludeAPortableFallback) {
  const auto targets = available_targets();
  ASSERT_FALSE(targets.empty());
  std::string names;
  for (int64_t t : targets) names += target_name(t) + " ";
  RecordProperty("targets", names);
  const std::string last = target_name(targets.back());
  EXPECT_TRUE(last == "EMU128" || last == "SCALAR") << names;
}

TEST(Elementwise, RmsNormMatchesReference) {
  for (int64_t n : {1, 7, 64, 172, 768, 1000}) {
    const int64_t rows = 3;
    const auto x = random_floats(rows * n, 1, -3.0f, 3.0f);
    const auto w = random_floats(n, 2);
    std::vector<float> want(rows * n);
    rms_norm_reference(x.data(), w.data(), rows, n, 1e-5f, want.data());
    for_each_target([&] {
      std::vector<float> got(rows * n);
      rms_norm(x.data(), w.data(), rows, n, 1e-5f, got.data());
      expect_close(got, want, 2e-6, 1e-7);
    });
  }
}

TEST(Elementwise, RmsNormKnownValue) {
  // x = [3, 4]: mean square 12.5, so y = x / sqrt(12.5) * w.
  const float x[] = {3, 4}, w[] = {1, 2};
  float y[2];
  rms_norm(x, w, 1, 2, 0.0f, y);
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-6);
}

TEST(Elementwise, SiluMulMatchesReference) {
  for (int64_t n : {1, 5, 16, 172, 2048}) {
    const auto g = random_floats(n, 3, -12.0f, 12.0f);
    const auto u = random_floats(n, 4);
    std::vector<float> want(n);
    silu_mul_reference(g.data(), u.data(), n, want.data());
    for_each_target([&] {
      std::vector<float> got(n);
      silu_mul(g.data(), u.data(), n, got.data());
      expect_close(got, want, 4e-6, 1e-7);
    });
  }
  // silu(0) = 0, silu(large) = large.
  const float g[] = {0.0f, 30.0f}, u[] = {5.0f, 2.0f};
  float out[2];
  silu_mul(g, u, 2, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 60.0f, 1e-4);
}

TEST(Elementwise, GeluMulMatchesReference) {
  for (int64_t n : {1, 5, 16, 172, 2048}) {
    const auto g = random_floats(n, 6, -8.0f, 8.0f);
    const auto u = random_floats(n, 7);
    std::vector<float> want(n);
    gelu_mul_reference(g.data(), u.data(), n, want.data());
    for_each_target([&] {
      std::vector<float> got(n);
      gelu_mul(g.data(), u.data(), n, got.data());
      // 1 + tanh cancels for negative inputs: absolute error ~ float epsilon x |x u|.
      expect_close(got, want, 4e-6, 1e-6);
      std::vector<float> dispatched(n);
      gated_activation(GatedActivation::kGeluTanh, g.data(), u.data(), n, dispatched.data());
      EXPECT_EQ(dispatched, got);
    });
  }
  // gelu(0) = 0, gelu(large) = large, gelu(very negative) = 0; gelu(1) by the tanh form.
  const float g[] = {0.0f, 30.0f, -30.0f, 1.0f}, u[] = {5.0f, 2.0f, 3.0f, 1.0f};
  float out[4];
  gelu_mul(g, u, 4, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 60.0f, 1e-4);
  EXPECT_NEAR(out[2], 0.0f, 1e-6);
  EXPECT_NEAR(out[3], 0.841192f, 1e-5);
}

TEST(Elementwise, SoftCapMatchesReference) {
  for (int64_t n : {1, 7, 16, 100, 32000}) {
    const auto x = random_floats(n, 8, -200.0f, 200.0f);
    for (float cap : {0.5f, 30.0f, 50.0f}) {
      auto want = x;
      soft_cap_reference(want.data(), n, cap);
      for_each_target([&] {
        auto got = x;
        soft_cap(got.data(), n, cap);
        expect_close(got, want, 2e-6, 1e-6);
        for (float v : got) ASSERT_LE(std::fabs(v), cap);
      });
    }
  }
}

TEST(Elementwise, SoftmaxMatchesReference) {
  for (int64_t n : {1, 3, 16, 33, 1000, 32000}) {
    auto x = random_floats(n, 5, -20.0f, 20.0f);
    auto want = x;
    softmax_reference(want.data(), n);
    // The float sum of n exponentials carries rounding that grows with n (a
    // one-lane target sums serially); far below the worst case n * 2^-24.
    const double rel = 4e-6 + 1e-9 * static_cast<double>(n);
    for_each_target([&] {
      auto got = x;
      softmax(got.data(), n);
      expect_close(got, want, rel, 1e-9);
      double sum = 0;
      for (float v : got) sum += v;
      EXPECT_NEAR(sum, 1.0, rel + 1e-6);
    });
  }
}

TEST(Elementwise, RopeMatchesReferenceBitExact) {
  const int n_heads = 3;
  for (int head_dim : {8, 64, 128, 20}) {
    for (int rot_dims : {head_dim, head_dim / 2 - (head_dim / 2) % 2}) {
      if (rot_dims == 0) continue;
      std::vector<float> inv_freq(rot_dims / 2);
      for (int i = 0; i < rot_dims / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rot_dims);
      const auto x = random_floats(n_heads * head_dim, 9);
      for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
        for (int64_t pos : {0, 1, 17, 4095}) {
          auto want = x;
          rope_reference(want.data(), n_heads, head_dim, rot_dims, pos, inv_freq.data(), style);
          for_each_target([&] {
            auto got = x;
            rope(got.data(), n_heads, head_dim, rot_dims, pos, inv_freq.data(), style);
            ASSERT_EQ(got, want) << "head_dim " << head_dim << " rot " << rot_dims << " pos " << pos;
          });
        }
      }
    }
  }
}

TEST(Elementwise, RopeRotatesTheRightPairs) {
  // One head of 4, pos 1, inv_freq {pi/2, 0}: the first pair turns 90 degrees.
  const float inv_freq[] = {static_cast<float>(M_PI / 2), 0.0f};
  float normal[] = {1, 2, 3, 4};
  rope(normal, 1, 4, 4, 1, inv_freq, RopeStyle::kNormal);  // pairs (0,1), (2,3)
  EXPECT_NEAR(normal[0], -2, 1e-6);
  EXPECT_NEAR(normal[1], 1, 1e-6);
  EXPECT_NEAR(normal[2], 3, 1e-6);
  EXPECT_NEAR(normal[3], 4, 1e-6);
  float neox[] = {1, 2, 3, 4};
  rope(neox, 1, 4, 4, 1, inv_freq, RopeStyle::kNeox);  // pairs (0,2), (1,3)
  EXPECT_NEAR(neox[0], -3, 1e-6);
  EXPECT_NEAR(neox[2], 1, 1e-6);
  EXPECT_NEAR(neox[1], 2, 1e-6);
  EXPECT_NEAR(neox[3], 4, 1e-6);
}

}  // namespace
}  // namespace ladder::ops
