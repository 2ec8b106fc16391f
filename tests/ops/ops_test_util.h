// Shared helpers of the ops tests: seeded random data, quantized weights made
// with the gguf module's reference quantizer, and running a check on every
// Highway target this CPU supports.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "gguf/quant.h"
#include "ops/simd_targets.h"

namespace ladder::ops::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n_out rows of n_in random values quantized to `type` with gguf::quantize_row.
inline std::vector<uint8_t> random_weights(TensorType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  const size_t rb = row_bytes(traits_of(type), static_cast<size_t>(n_in));
  std::vector<uint8_t> w(rb * static_cast<size_t>(n_out));
  const std::vector<float> src = random_floats(static_cast<size_t>(n_in * n_out), seed);
  for (int64_t o = 0; o < n_out; ++o) {
    const Status st =
        gguf::quantize_row(type, src.data() + o * n_in, w.data() + o * rb, static_cast<size_t>(n_in));
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return w;
}

// n_out rows of n_in weights of `type` dequantized by the gguf module (the
// reference every kernel is held to).
inline std::vector<float> dequantized(TensorType type, const uint8_t* w, int64_t n_in, int64_t n_out) {
  std::vector<float> out(static_cast<size_t>(n_in * n_out));
  const size_t rb = row_bytes(traits_of(type), static_cast<size_t>(n_in));
  for (int64_t o = 0; o < n_out; ++o) {
    const Status st =
        gguf::dequantize_row(type, w + o * rb, out.data() + o * n_in, static_cast<size_t>(n_in));
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return out;
}

// Largest error matmul may make against exact arithmetic on the dequantized
// weights w (one row) and activations x: float rounding (n_in * 2^-23 of
// sum |w x|, loose for any order) plus, for the integer kernels
// (quantized_x), quantizing x to 8 bits per 32 elements (each x off by at
// most half a step, amax/254).
inline double matmul_error_bound(bool quantized_x, const float* w, const float* x, int64_t n_in) {
  double sum_abs = 0, quant = 0;
  for (int64_t k = 0; k < n_in; ++k) sum_abs += std::fabs(static_cast<double>(w[k]) * x[k]);
  if (quantized_x) {
    for (int64_t b = 0; b < n_in; b += 32) {
      double amax = 0, wsum = 0;
      for (int64_t k = b; k < b + 32; ++k) {
        amax = std::max(amax, static_cast<double>(std::fabs(x[k])));
        wsum += std::fabs(w[k]);
      }
      quant += wsum * amax / 254.0;
    }
  }
  return 1.001 * quant + static_cast<double>(n_in) * 1.2e-7 * sum_abs + 1e-6;
}

// Runs fn once per supported target (dispatch forced to it), naming the
// target in failures; restores the default dispatch afterwards.
inline void for_each_target(const std::function<void()>& fn) {
  const std::vector<int64_t> targets = available_targets();
  ASSERT_FALSE(targets.empty());
  for (int64_t t : targets) {
    SCOPED_TRACE("target " + target_name(t));
    force_target_for_test(t);
    fn();
  }
  force_target_for_test(0);
}

}  // namespace ladder::ops::testing
