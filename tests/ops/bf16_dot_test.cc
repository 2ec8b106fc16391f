// BF16 weights on AVX512-BF16 dot products (ops/bf16_dot.h,
// matmul_bf16_dot-inl.h). Where the CPU has no AVX512-BF16, or the AVX3_DL
// kernels are not dispatched, the kernel tests say so and skip; BF16 weights
// then run on the FMA kernel, tested in packed_weights_test.cc and
// matmul_test.cc.
#include "ops/bf16_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/half.h"
#include "ops/amx.h"
#include "ops/kernel_choice.h"
#include "ops/matmul.h"
#include "ops/packed_weights.h"
#include "ops/simd_targets.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::cpuinfo_has_flag;
using testing::dequantized;
using testing::random_floats;
using testing::random_weights;

TEST(Bf16Dot, DetectionAgreesWithTheKernel) {
  if (!std::ifstream("/proc/cpuinfo")) GTEST_SKIP() << "no /proc/cpuinfo to compare with";
  EXPECT_EQ(cpu_has_avx512_bf16(), cpuinfo_has_flag("avx512_bf16"));
}

// Where the dot kernel can run it is on unless declined, and the kernel
// fingerprint says which arithmetic BF16 weights get.
TEST(Bf16Dot, OnByDefaultWhereTheCpuHasItAndNamedInTheFingerprint) {
  const bool can = cpu_has_avx512_bf16() && active_target_name() == "AVX3_DL" && !amx_bf16_active();
  EXPECT_EQ(bf16_dot_active(), can);
  EXPECT_EQ(kernel_fingerprint().find(";bf16=dpbf16x2") != std::string::npos, can);
  set_bf16_dot_wanted(false);
  EXPECT_FALSE(bf16_dot_active());
  EXPECT_EQ(kernel_fingerprint().find("bf16=dpbf16x2"), std::string::npos);
  set_bf16_dot_wanted(std::nullopt);
  EXPECT_EQ(bf16_dot_active(), can);
}

// LADDER_BF16_DOT=0 is read once per process: each setting runs in a fresh
// child, which exits 1 when the dot kernel is active, else 0.
[[noreturn]] void exit_with_dot_use(const char* setting) {
  setenv("LADDER_BF16_DOT", setting, 1);
  std::exit(bf16_dot_active() ? 1 : 0);
}

TEST(Bf16DotDeathTest, EnvironmentSwitchesItOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_dot_use("0"), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(exit_with_dot_use("off"), ::testing::ExitedWithCode(0), "");
  if (!cpu_has_avx512_bf16() || active_target_name() != "AVX3_DL" || amx_bf16_active()) {
    GTEST_SKIP() << "the dot kernel cannot run here, so only the off setting was checked";
  }
  EXPECT_EXIT(exit_with_dot_use("1"), ::testing::ExitedWithCode(1), "");
}

// vdpbf16ps as the instruction set reference defines it: per lane, the odd
// element's product then the even one's, each added with one rounding to
// F32, denormal inputs and results flushed to zero.
float flush(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}
float dp_pair(float acc, uint16_t x0, uint16_t x1, uint16_t w0, uint16_t w1) {
  acc = flush(std::fma(flush(bf16_to_f32(x1)), flush(bf16_to_f32(w1)), flush(acc)));
  return flush(std::fma(flush(bf16_to_f32(x0)), flush(bf16_to_f32(w0)), acc));
}

// The kernel's arithmetic, one output at a time, written from its contract
// (matmul_bf16_dot-inl.h): x split into bf16 hi and lo (nearest, ties to
// even), zero-padded to a multiple of 32; per pair, hi then lo.
float bf16x2_model(const uint16_t* w, const float* x, int64_t n_in) {
  const int64_t padded = (n_in + 31) / 32 * 32;
  std::vector<uint16_t> xh(padded, 0), xl(padded, 0), wp(padded, 0);
  for (int64_t k = 0; k < n_in; ++k) {
    xh[k] = f32_to_bf16(x[k]);
    xl[k] = f32_to_bf16(x[k] - bf16_to_f32(xh[k]));
    wp[k] = w[k];
  }
  float acc = 0.0f;
  for (int64_t k = 0; k < padded; k += 2) {
    acc = dp_pair(acc, xh[k], xh[k + 1], wp[k], wp[k + 1]);
    acc = dp_pair(acc, xl[k], xl[k + 1], wp[k], wp[k + 1]);
  }
  return acc;
}

// bf16x2 carries x to 16 significant bits (within 2^-16 of |x w| a
// product), then F32 sums.
double bf16x2_bound(const float* w, const float* x, int64_t n_in) {
  double sum_abs = 0;
  for (int64_t k = 0; k < n_in; ++k) sum_abs += std::fabs(static_cast<double>(w[k]) * x[k]);
  return (std::ldexp(1.0, -15) + static_cast<double>(2 * n_in + 2) * 1.2e-7) * sum_abs + 1e-6;
}

class Bf16DotKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_dot_active()) {
      GTEST_SKIP() << "the BF16 dot kernel is not in use here (CPU without AVX512-BF16, another target, "
                      "AMX-BF16 tiles or LADDER_BF16_DOT=0)";
    }
  }
};

struct DotCase {
  int64_t n_in, n_out;
};

// n_in off the 32-element step (a zero-padded last step) and off a pair
// (odd), n_out off the 16-column group, off the 4-group tile and off the
// 8-group decode tile.
const DotCase kDotCases[] = {{7, 5}, {33, 17}, {96, 32}, {256, 130}, {768, 48}, {100, 200}};

TEST_F(Bf16DotKernel, MatchesTheInstructionModelAndIsBatchInvariant) {
  for (const DotCase& c : kDotCases) {
    SCOPED_TRACE(std::to_string(c.n_in) + "x" + std::to_string(c.n_out));
    const auto w = random_weights(TensorType::kBF16, c.n_in, c.n_out, 71);
    const WeightMatrix wm{TensorType::kBF16, w.data(), c.n_in, c.n_out};
    ThreadPool pool2(2);
    const PackedWeights packed = pack_weights(wm, pool2);
    ASSERT_FALSE(packed.empty());
    ASSERT_EQ(packed.layout, PackedLayout::kBf16Dot);
    EXPECT_EQ(packed.bytes, static_cast<size_t>((c.n_out + 15) / 16 * ((c.n_in + 31) / 32)) * 1024);
    const int64_t max_rows = 33;
    const auto x = random_floats(static_cast<size_t>(max_rows * c.n_in), 72, -3.0f, 3.0f);
    const auto wf = dequantized(TensorType::kBF16, w.data(), c.n_in, c.n_out);
    const auto* w16 = reinterpret_cast<const uint16_t*>(w.data());
    std::vector<float> alone(static_cast<size_t>(max_rows * c.n_out)), ref(alone.size());
    ThreadPool one(1);
    for (int64_t r = 0; r < max_rows; ++r) {
      matmul(wm, packed, x.data() + r * c.n_in, 1, alone.data() + r * c.n_out, one);
    }
    matmul_reference(wm, x.data(), max_rows, ref.data());
    for (int64_t r = 0; r < max_rows; ++r) {
      for (int64_t o = 0; o < c.n_out; ++o) {
        const float* xr = x.data() + r * c.n_in;
        ASSERT_EQ(alone[r * c.n_out + o], bf16x2_model(w16 + o * c.n_in, xr, c.n_in))
            << "row " << r << " out " << o;
        ASSERT_NEAR(alone[r * c.n_out + o], ref[r * c.n_out + o],
                    bf16x2_bound(wf.data() + o * c.n_in, xr, c.n_in))
            << "row " << r << " out " << o;
      }
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {1, 2, 3, 4, 5, 8, 16, 17, 33}) {
        std::vector<float> batch(static_cast<size_t>(rows * c.n_out), -1.0f);
        matmul(wm, packed, x.data(), rows, batch.data(), pool);
        ASSERT_EQ(std::memcmp(batch.data(), alone.data(), batch.size() * sizeof(float)), 0)
            << "rows " << rows << " threads " << threads;
      }
    }
  }
}

// Declined, BF16 weights pack for the FMA kernel again, whose results differ
// (it carries x at 24 bits): the switch really changes the arithmetic.
TEST_F(Bf16DotKernel, DeclinedBf16PacksForTheFmaKernel) {
  const int64_t n_in = 256, n_out = 32;
  const auto w = random_weights(TensorType::kBF16, n_in, n_out, 73);
  const WeightMatrix wm{TensorType::kBF16, w.data(), n_in, n_out};
  const auto x = random_floats(static_cast<size_t>(n_in), 74);
  ThreadPool pool(2);
  const PackedWeights dot = pack_weights(wm, pool);
  set_bf16_dot_wanted(false);
  const PackedWeights fma = pack_weights(wm, pool);
  set_bf16_dot_wanted(std::nullopt);
  EXPECT_EQ(dot.layout, PackedLayout::kBf16Dot);
  EXPECT_EQ(fma.layout, PackedLayout::kFloatChunks);
  std::vector<float> y_dot(n_out), y_fma(n_out);
  matmul(wm, dot, x.data(), 1, y_dot.data(), pool);
  matmul(wm, fma, x.data(), 1, y_fma.data(), pool);
  int differ = 0;
  for (int64_t o = 0; o < n_out; ++o) {
    differ += y_dot[o] != y_fma[o];
    EXPECT_NEAR(y_dot[o], y_fma[o], 1e-3f * (1.0f + std::fabs(y_fma[o])));
  }
  EXPECT_GT(differ, 0);
}

// In a group with other products (one activation split for all), each
// output equals its own matmul bit for bit.
TEST_F(Bf16DotKernel, GroupedProductsMatchEachAlone) {
  const int64_t n_in = 64;
  const auto wb = random_weights(TensorType::kBF16, n_in, 20, 75);
  const auto wq = random_weights(TensorType::kQ8_0, n_in, 24, 76);
  const auto wh = random_weights(TensorType::kF16, n_in, 18, 77);
  const WeightMatrix a{TensorType::kBF16, wb.data(), n_in, 20}, b{TensorType::kQ8_0, wq.data(), n_in, 24},
      h{TensorType::kF16, wh.data(), n_in, 18};
  ThreadPool pool(2);
  const PackedWeights pa = pack_weights(a, pool), pb = pack_weights_always(b, pool),
                      ph = pack_weights(h, pool);
  ASSERT_EQ(pa.layout, PackedLayout::kBf16Dot);
  const int64_t rows = 18;
  const auto x = random_floats(static_cast<size_t>(rows * n_in), 78);
  std::vector<float> ya(rows * 20), yb(rows * 24), yh(rows * 18), wa(ya.size()), wb2(yb.size()),
      wh2(yh.size());
  const MatmulOutput outs[] = {{&a, &pa, ya.data()}, {&b, &pb, yb.data()}, {&h, &ph, yh.data()}};
  matmul_group(outs, x.data(), rows, pool);
  matmul(a, pa, x.data(), rows, wa.data(), pool);
  matmul(b, pb, x.data(), rows, wb2.data(), pool);
  matmul(h, ph, x.data(), rows, wh2.data(), pool);
  EXPECT_EQ(std::memcmp(ya.data(), wa.data(), ya.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(yb.data(), wb2.data(), yb.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(yh.data(), wh2.data(), yh.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ladder::ops
