// Shared helpers of the ops tests: seeded random data, quantized weights made
// with the gguf module's reference quantizer, and running a check on every
// Highway target this CPU supports.
#pragma once

#include <gtest/gtest.h>

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
