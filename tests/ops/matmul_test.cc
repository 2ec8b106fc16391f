#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gguf/quant.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_simd.h"
#include "ops/thread_pool.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::for_each_target;
using testing::random_floats;
using testing::random_weights;

const TensorType kAllTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ8_0,
                                TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1,
                                TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kQ8_K};

bool is_float(TensorType t) {
  return t == TensorType::kF32 || t == TensorType::kF16 || t == TensorType::kBF16;
}

int64_t block_of(TensorType t) {
  return traits_of(t).block_elems;
}

std::vector<float> dequantized(TensorType type, const std::vector<uint8_t>& w, int64_t n_in, int64_t n_out) {
  return testing::dequantized(type, w.data(), n_in, n_out);
}

double error_bound(TensorType type, const float* w, const float* x, int64_t n_in) {
  return testing::matmul_error_bound(!is_float(type), w, x, n_in);
}

TEST(Matmul, SupportChecks) {
  EXPECT_TRUE(check_matmul_support(TensorType::kF32, 173).is_ok());
  EXPECT_TRUE(check_matmul_support(TensorType::kQ8_0, 64).is_ok());
  EXPECT_EQ(check_matmul_support(TensorType::kQ8_0, 48).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_matmul_support(TensorType::kQ4_K, 288).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_matmul_support(TensorType::kF32, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_matmul_support(TensorType::kQ2_K, 256).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(check_matmul_support(TensorType::kI8, 256).code(), StatusCode::kUnimplemented);
  for (TensorType t : kAllTypes) EXPECT_TRUE(check_matmul_support(t, 512).is_ok()) << tensor_type_name(t);
}

TEST(Matmul, HandComputedF32) {
  // W = [[1, 2, 3], [-1, 0, 0.5]], x = [[1, 1, 1], [2, -1, 4]].
  const float w[] = {1, 2, 3, -1, 0, 0.5f};
  const float x[] = {1, 1, 1, 2, -1, 4};
  float y[4];
  ThreadPool pool(2);
  for_each_target([&] {
    matmul({TensorType::kF32, w, 3, 2}, x, 2, y, pool);
    EXPECT_EQ(y[0], 6.0f);
    EXPECT_EQ(y[1], -0.5f);
    EXPECT_EQ(y[2], 12.0f);
    EXPECT_EQ(y[3], 0.0f);
  });
}

// The ops dequantizer (embedding_lookup) against the gguf module's reference.
TEST(Matmul, EmbeddingLookupMatchesGgufDequantizer) {
  for (TensorType type : kAllTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(type)));
    const int64_t n_in = 512, n_out = 5;
    const auto w = random_weights(type, n_in, n_out, 11);
    const auto ref = dequantized(type, w, n_in, n_out);
    const int32_t ids[] = {4, 0, 2, 4};
    std::vector<float> out(4 * n_in);
    embedding_lookup({type, w.data(), n_in, n_out}, ids, 4, out.data());
    for (int i = 0; i < 4; ++i) {
      for (int64_t k = 0; k < n_in; ++k) {
        ASSERT_EQ(out[i * n_in + k], ref[ids[i] * n_in + k]) << "row " << ids[i] << " element " << k;
      }
    }
  }
}

struct Shape {
  int64_t n_in, n_out, rows;
};

TEST(Matmul, MatchesReferenceOnEveryTarget) {
  ThreadPool pool(2);
  for (TensorType type : kAllTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(type)));
    std::vector<Shape> shapes = {{512, 172, 1}, {256, 33, 33}, {768, 64, 5}, {1024, 17, 2}};
    if (block_of(type) == 1) shapes.push_back({173, 37, 3});
    if (block_of(type) == 32) shapes.push_back({96, 9, 4});
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::to_string(s.n_in) + "x" + std::to_string(s.n_out) + " rows " +
                   std::to_string(s.rows));
      const auto w = random_weights(type, s.n_in, s.n_out, static_cast<uint32_t>(s.n_in + s.n_out));
      const auto wf = dequantized(type, w, s.n_in, s.n_out);
      // Activations with varied magnitudes per block, like real hidden states.
      auto x = random_floats(static_cast<size_t>(s.rows * s.n_in), 7);
      for (size_t i = 0; i < x.size(); ++i) x[i] *= 1.0f + static_cast<float>((i / 32) % 5);
      const WeightMatrix wm{type, w.data(), s.n_in, s.n_out};
      std::vector<float> ref(static_cast<size_t>(s.rows * s.n_out));
      matmul_reference(wm, x.data(), s.rows, ref.data());
      for_each_target([&] {
        std::vector<float> y(ref.size(), NAN);
        matmul(wm, x.data(), s.rows, y.data(), pool);
        for (int64_t r = 0; r < s.rows; ++r) {
          for (int64_t o = 0; o < s.n_out; ++o) {
            const double bound = error_bound(type, wf.data() + o * s.n_in, x.data() + r * s.n_in, s.n_in);
            ASSERT_NEAR(y[r * s.n_out + o], ref[r * s.n_out + o], bound) << "row " << r << " out " << o;
          }
        }
      });
    }
  }
}

// The reference itself against a double-precision dot of gguf-dequantized
// weights (independent code paths).
TEST(Matmul, ReferenceMatchesIndependentDot) {
  for (TensorType type : kAllTypes) {
    const int64_t n_in = 256, n_out = 3, rows = 2;
    const auto w = random_weights(type, n_in, n_out, 5);
    const auto wf = dequantized(type, w, n_in, n_out);
    const auto x = random_floats(rows * n_in, 6);
    std::vector<float> y(rows * n_out);
    matmul_reference({type, w.data(), n_in, n_out}, x.data(), rows, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < n_out; ++o) {
        double acc = 0;
        for (int64_t k = 0; k < n_in; ++k) acc += static_cast<double>(wf[o * n_in + k]) * x[r * n_in + k];
        EXPECT_NEAR(y[r * n_out + o], acc, 1e-5 * (1 + std::fabs(acc))) << tensor_type_name(type);
      }
    }
  }
}

// Bit-exact batch invariance: a row's output is the same alone, inside any
// batch size 1..64, inside arbitrary chunks, at 1..4 threads.
void check_batch_invariance(TensorType type, int64_t n_in, int64_t n_out, bool all_batch_sizes) {
  SCOPED_TRACE(std::string(tensor_type_name(type)));
  constexpr int64_t kRows = 64;
  const auto w = random_weights(type, n_in, n_out, 21);
  const auto x = random_floats(static_cast<size_t>(kRows * n_in), 22);
  const WeightMatrix wm{type, w.data(), n_in, n_out};
  std::vector<float> full(static_cast<size_t>(kRows * n_out));
  {
    ThreadPool pool(2);
    matmul(wm, x.data(), kRows, full.data(), pool);
  }
  for (int threads : {1, 2, 3, 4}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    ThreadPool pool(threads);
    // Every batch size b (rows [0, b)) or a spread of them.
    std::vector<int64_t> sizes;
    for (int64_t b = 1; b <= kRows; ++b)
      if (all_batch_sizes || b <= 9 || b % 8 == 1 || b == kRows) sizes.push_back(b);
    for (int64_t b : sizes) {
      std::vector<float> y(static_cast<size_t>(b * n_out));
      matmul(wm, x.data(), b, y.data(), pool);
      ASSERT_EQ(std::memcmp(y.data(), full.data(), y.size() * sizeof(float)), 0) << "batch " << b;
    }
    // Each row alone, at an offset (not the first row of a batch).
    for (int64_t r : {int64_t{5}, int64_t{37}, kRows - 1}) {
      std::vector<float> y(static_cast<size_t>(n_out));
      matmul(wm, x.data() + r * n_in, 1, y.data(), pool);
      ASSERT_EQ(std::memcmp(y.data(), full.data() + r * n_out, y.size() * sizeof(float)), 0) << "row " << r;
    }
    // Chunked like a prompt split into prefill chunks.
    std::vector<float> y(full.size());
    int64_t r = 0;
    for (int64_t c : {3, 1, 17, 8, 2, 33}) {
      const int64_t take = std::min(c, kRows - r);
      matmul(wm, x.data() + r * n_in, take, y.data() + r * n_out, pool);
      r += take;
    }
    ASSERT_EQ(r, kRows);
    ASSERT_EQ(std::memcmp(y.data(), full.data(), y.size() * sizeof(float)), 0) << "chunked";
  }
}

TEST(Matmul, BatchInvariantBitExact) {
  // n_out = 40: not a multiple of any tile width or of the thread grain.
  for (TensorType type : kAllTypes)
    check_batch_invariance(type, 512, 40, type == TensorType::kF32 || type == TensorType::kQ8_0);
  check_batch_invariance(TensorType::kF32, 173, 19, false);
}

TEST(Matmul, BatchInvariantOnEveryTarget) {
  for_each_target([&] {
    for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                            TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ5_K}) {
      check_batch_invariance(type, 256, 21, false);
    }
  });
}

}  // namespace
}  // namespace ladder::ops

namespace ladder::ops {
namespace {

// The vector activation quantizer matches the scalar one bit for bit, on
// every target (ties, zeros, a block of all zeros, large magnitudes).
TEST(Matmul, ActivationQuantizationMatchesScalar) {
  const int64_t rows = 3, n = 256;
  auto x = random_floats(rows * n, 41, -3.0f, 3.0f);
  for (int j = 32; j < 64; ++j) x[j] = 0.0f;                // all-zero block
  for (int j = 64; j < 96; ++j) x[j] = (j % 5 - 2) * 0.5f;  // exact ties at amax/127 steps
  x[100] = 1e30f;
  std::vector<int8_t> q0(rows * n), q1(rows * n);
  std::vector<uint8_t> u0(rows * n), u1(rows * n);
  std::vector<float> d0(rows * n / 32), d1(d0.size()), s0(d0.size()), s1(d0.size());
  detail::quantize_activations(x.data(), rows, n, q0.data(), u0.data(), d0.data(), s0.data());
  for_each_target([&] {
    detail::quantize_activations_simd(x.data(), rows, n, q1.data(), u1.data(), d1.data(), s1.data());
    EXPECT_EQ(q0, q1);
    EXPECT_EQ(u0, u1);
    EXPECT_EQ(d0, d1);
    EXPECT_EQ(s0, s1);
  });
  for (int j = 0; j < 32; ++j) EXPECT_EQ(static_cast<int>(u0[j]), q0[j] + 128);
  EXPECT_EQ(q0[100], 127);
}

}  // namespace
}  // namespace ladder::ops
