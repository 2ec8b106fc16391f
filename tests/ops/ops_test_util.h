// Shared helpers of the ops tests: seeded random data, quantized weights made
// with the gguf module's reference quantizer, and running a check on every
// Highway target this CPU supports.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "gguf/quant.h"
#include "ops/attention.h"
#include "ops/kv_codec.h"
#include "ops/simd_targets.h"

namespace ladder::ops::testing {

// A paged K or V store of n_blocks blocks in any KV format, with staging
// slots (one per block) for the staged ones. Unwritten bytes hold `fill`
// (0xFF: NaN in the float formats, so a stray read poisons the output).
struct PagedStore {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> staging;
  std::vector<int32_t> slots;
  PagedKvLayer layer;
};

inline PagedStore make_store(TensorType dtype, int n_blocks, int block_size, int n_kv_heads, int head_dim,
                             KvLayout layout, uint8_t fill = 0xFF) {
  PagedStore s;
  s.layer.layout = layout;
  s.layer.block_size = block_size;
  s.layer.n_kv_heads = n_kv_heads;
  s.layer.head_dim = head_dim;
  s.layer.dtype = dtype;
  s.layer.block_stride_bytes = kv_layer_block_bytes(dtype, layout, block_size, n_kv_heads, head_dim);
  s.bytes.assign(s.layer.block_stride_bytes * static_cast<size_t>(n_blocks), fill);
  s.layer.base = s.bytes.data();
  const size_t slot = kv_layer_staging_bytes(dtype, block_size, n_kv_heads, head_dim);
  if (slot > 0) {
    s.staging.assign(slot * static_cast<size_t>(n_blocks), fill);
    s.slots.resize(static_cast<size_t>(n_blocks));
    for (int i = 0; i < n_blocks; ++i) s.slots[static_cast<size_t>(i)] = i;
    s.layer.staging = s.staging.data();
    s.layer.staging_stride_bytes = slot;
    s.layer.staging_slot = s.slots.data();
  }
  return s;
}

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

// Whether /proc/cpuinfo's flags line lists `flag`: what the kernel found,
// an independent source for the library's own CPUID detection.
inline bool cpuinfo_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
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

// attention() over n queries (q: [n][n_heads][head_dim], positions pos)
// on every target: within 2e-5 of `want`, and bit-identical to each query
// alone and to chunks of 3 and 7 queries, at 1 and 3 threads.
inline void expect_attention_matches_and_invariant(const std::vector<float>& q, int n, const int32_t* pos,
                                                   int n_heads, const PagedKvLayer& k, const PagedKvLayer& v,
                                                   const int32_t* table, float scale, const std::vector<float>& want,
                                                   AttentionScoring scoring = {}) {
  const int q_dim = n_heads * k.head_dim;
  for_each_target([&] {
    ThreadPool pool(2);
    std::vector<float> all(want.size());
    attention(q.data(), n, pos, n_heads, k, v, table, scale, all.data(), pool, scoring);
    for (size_t i = 0; i < all.size(); ++i) ASSERT_NEAR(all[i], want[i], 2e-5) << "element " << i;
    for (int threads : {1, 3}) {
      ThreadPool other(threads);
      for (int t : {0, n / 2, n - 1}) {
        std::vector<float> one(static_cast<size_t>(q_dim));
        attention(q.data() + t * q_dim, 1, pos + t, n_heads, k, v, table, scale, one.data(), other, scoring);
        ASSERT_EQ(std::memcmp(one.data(), all.data() + t * q_dim, one.size() * sizeof(float)), 0) << "query " << t;
      }
      for (int chunk : {3, 7}) {
        std::vector<float> chunked(all.size());
        for (int t0 = 0; t0 < n; t0 += chunk) {
          attention(q.data() + t0 * q_dim, std::min(chunk, n - t0), pos + t0, n_heads, k, v, table, scale,
                    chunked.data() + t0 * q_dim, other, scoring);
        }
        ASSERT_EQ(std::memcmp(chunked.data(), all.data(), all.size() * sizeof(float)), 0) << "chunk " << chunk;
      }
    }
  });
}

}  // namespace ladder::ops::testing
