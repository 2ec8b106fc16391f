#include "ops/hadamard.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::random_floats;

TEST(Hadamard, BlockIsTheLargestPowerOfTwoDividingTheHead) {
  EXPECT_EQ(hadamard_block(128), 128);
  EXPECT_EQ(hadamard_block(96), 32);
  EXPECT_EQ(hadamard_block(80), 16);
  EXPECT_EQ(hadamard_block(8), 8);
  EXPECT_EQ(hadamard_block(7), 1);
}

// The fast transform against H[i][j] = (-1)^popcount(i & j) / sqrt(b), block by block.
TEST(Hadamard, MatchesTheMatrixDefinition) {
  for (int64_t dim : {8, 64, 96, 128}) {
    const int64_t b = hadamard_block(dim);
    const int64_t n_vectors = 3;
    const auto x = random_floats(static_cast<size_t>(n_vectors * dim), 7);
    auto y = x;
    hadamard_rotate(y.data(), n_vectors, dim);
    for (int64_t s = 0; s < n_vectors * dim; s += b) {
      for (int64_t i = 0; i < b; ++i) {
        double want = 0;
        for (int64_t j = 0; j < b; ++j) {
          const int sign = std::popcount(static_cast<uint64_t>(i & j)) % 2 == 0 ? 1 : -1;
          want += sign * static_cast<double>(x[static_cast<size_t>(s + j)]);
        }
        want /= std::sqrt(static_cast<double>(b));
        EXPECT_NEAR(y[static_cast<size_t>(s + i)], want, 1e-5) << "dim " << dim << " element " << s + i;
      }
    }
  }
}

TEST(Hadamard, IsItsOwnInverseAndKeepsDotProducts) {
  const int64_t dim = 128;
  const auto q = random_floats(dim, 1), k = random_floats(dim, 2);
  auto hq = q, hk = k;
  hadamard_rotate(hq.data(), 1, dim);
  hadamard_rotate(hk.data(), 1, dim);
  double dot = 0, hdot = 0;
  for (int64_t i = 0; i < dim; ++i) {
    dot += static_cast<double>(q[static_cast<size_t>(i)]) * k[static_cast<size_t>(i)];
    hdot += static_cast<double>(hq[static_cast<size_t>(i)]) * hk[static_cast<size_t>(i)];
  }
  EXPECT_NEAR(hdot, dot, 1e-4);
  hadamard_rotate(hq.data(), 1, dim);
  for (int64_t i = 0; i < dim; ++i) EXPECT_NEAR(hq[static_cast<size_t>(i)], q[static_cast<size_t>(i)], 1e-5);
}

// What the rotation is for: one large channel no longer sets the int8 grid
// of its group's small ones, it is spread over the whole block.
TEST(Hadamard, SpreadsALargeChannelOverTheBlock) {
  std::vector<float> x(64, 0.01f);
  x[5] = 10.0f;
  hadamard_rotate(x.data(), 1, 64);
  float lo = INFINITY, hi = 0;
  for (float v : x) lo = std::min(lo, std::fabs(v)), hi = std::max(hi, std::fabs(v));
  EXPECT_GT(lo, 1.0f);
  EXPECT_LT(hi, 1.5f);
}

TEST(Hadamard, LeavesAnOddHeadAlone) {
  auto x = random_floats(14, 3);
  const auto before = x;
  hadamard_rotate(x.data(), 2, 7);
  EXPECT_EQ(x, before);
}

}  // namespace
}  // namespace ladder::ops
