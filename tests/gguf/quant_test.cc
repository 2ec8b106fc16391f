// Dequantization against hand-built blocks whose expected values are worked
// out here from the documented ggml layouts (common/tensor_type.h), and
// quantize -> dequantize round trips with error bounds derived from each
// format's step size.
#include "gguf/quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace ladder::gguf {
namespace {

template <typename Block>
std::vector<float> dequant(TensorType type, const Block& b, size_t n) {
  std::vector<float> y(n, -999.0f);
  Status st = dequantize_row(type, &b, y.data(), n);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return y;
}

TEST(Dequantize, F32F16BF16) {
  const float f[3] = {1.5f, -0.0f, 3.25e-7f};
  std::vector<float> y(3);
  ASSERT_TRUE(dequantize_row(TensorType::kF32, f, y.data(), 3).is_ok());
  EXPECT_EQ(std::memcmp(f, y.data(), sizeof(f)), 0);

  // IEEE half: 1.0, -2.0, 65504 (largest), 2^-24 (smallest subnormal), 0x3555.
  const uint16_t h[5] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555};
  std::vector<float> yh(5);
  ASSERT_TRUE(dequantize_row(TensorType::kF16, h, yh.data(), 5).is_ok());
  EXPECT_EQ(yh[0], 1.0f);
  EXPECT_EQ(yh[1], -2.0f);
  EXPECT_EQ(yh[2], 65504.0f);
  EXPECT_EQ(yh[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(yh[4], 1.0f / 4 + 0x155 / 1024.0f / 4);  // 2^-2 * (1 + 0x155/1024)

  // bfloat16: the top half of an f32.
  const uint16_t b[3] = {0x3F80, 0xC040, 0x4049};
  std::vector<float> yb(3);
  ASSERT_TRUE(dequantize_row(TensorType::kBF16, b, yb.data(), 3).is_ok());
  EXPECT_EQ(yb[0], 1.0f);
  EXPECT_EQ(yb[1], -3.0f);
  EXPECT_EQ(yb[2], 3.140625f);
}

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant(TensorType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;            // low nibble: element j
    EXPECT_EQ(y[j + 16], (15 - j - 8) * 0.5f) << j;  // high nibble: element j + 16
  }
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b{};
  b.d = 0x3400;  // 0.25
  b.m = 0xBC00;  // -1.0
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant(TensorType::kQ4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.0f) << j;
    EXPECT_EQ(y[j + 16], (15 - j) * 0.25f - 1.0f) << j;
  }
}

TEST(Dequantize, Q5_0) {
  BlockQ5_0 b{};
  b.d = 0x3C00;  // 1.0
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    if (j % 2 == 0) qh |= 1u << j;         // fifth bit of element j
    if (j % 3 == 0) qh |= 1u << (j + 16);  // fifth bit of element j + 16
  }
  std::memcpy(b.qh, &qh, 4);  // little-endian u32
  auto y = dequant(TensorType::kQ5_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], static_cast<float>(j + (j % 2 == 0 ? 16 : 0) - 16)) << j;
    EXPECT_EQ(y[j + 16], static_cast<float>((15 - j) + (j % 3 == 0 ? 16 : 0) - 16)) << j;
  }
  // Spot values: element 0 = 0 | 16 - 16 = 0; element 16 = 15 | 16 - 16 = 15.
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[16], 15.0f);
  EXPECT_EQ(y[1], -15.0f);
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b{};
  b.d = 0x3800;    // 0.5
  b.m = 0x4000;    // 2.0
  b.qh[0] = 0xFF;  // elements 0..7 have the fifth bit
  b.qh[3] = 0x80;  // element 31 has it
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
  auto y = dequant(TensorType::kQ5_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j + (j < 8 ? 16 : 0)) * 0.5f + 2.0f) << j;
    EXPECT_EQ(y[j + 16], (j + (j == 15 ? 16 : 0)) * 0.5f + 2.0f) << j;
  }
  EXPECT_EQ(y[31], 31 * 0.5f + 2.0f);
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b{};
  b.d = 0x3000;  // 0.125
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  auto y = dequant(TensorType::kQ8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j * 8 - 128) * 0.125f) << j;
}

// The 6-bit scales/mins used by the Q4_K and Q5_K tests, and their packing
// worked out by hand: bytes 0..3 = scale j | (scale j+4 >> 4) << 6,
// bytes 4..7 = min j | (min j+4 >> 4) << 6, bytes 8..11 = low nibbles of
// scale j+4 | low nibbles of min j+4 << 4.
constexpr int kScales[8] = {1, 2, 3, 4, 17, 33, 49, 63};
constexpr int kMins[8] = {5, 6, 7, 8, 52, 20, 36, 12};
// The high bits of scales 4..7 (1, 2, 3, 3) differ from those of mins 4..7
// (3, 1, 2, 0), so mixing up which byte holds which shows.
constexpr uint8_t kPackedScales[12] = {65, 130, 195, 196, 197, 70, 135, 8, 65, 65, 65, 207};

TEST(Dequantize, Q4_K) {
  BlockQ4_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  std::memcpy(b.scales, kPackedScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  auto y = dequant(TensorType::kQ4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int chunk = e / 64, l = e % 64;
    // Low nibbles of qs[32*chunk ..] are sub-block 2*chunk, high nibbles 2*chunk+1.
    const int q = l < 32 ? b.qs[32 * chunk + l] & 0xF : b.qs[32 * chunk + l - 32] >> 4;
    const int sub = e / 32;
    EXPECT_EQ(y[e], 1.0f * kScales[sub] * q - 0.5f * kMins[sub]) << e;
  }
  // Spot values: element 0: q=0, sub 0 -> -2.5; element 255: q = 15 - 15 = 0
  // ... element 224 (sub 7, chunk 3, l=32): q = qs[96] >> 4 = 15 -> 63*15 - 0.5*12.
  EXPECT_EQ(y[0], -2.5f);
  EXPECT_EQ(y[224], 63.0f * 15 - 6.0f);
  EXPECT_EQ(y[160], 33.0f * 15 - 10.0f);  // sub 5 = chunk 2 high nibbles, qs[64] >> 4 = 15
}

TEST(Dequantize, Q5_K) {
  BlockQ5_K b{};
  b.d = 0x3800;     // 0.5
  b.dmin = 0x3400;  // 0.25
  std::memcpy(b.scales, kPackedScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i * 5) & 0xFF);
  for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>(l * 37 + 11);
  auto y = dequant(TensorType::kQ5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int chunk = e / 64, l = e % 64;
    const bool upper = l >= 32;
    const int lane = upper ? l - 32 : l;
    const int low4 = upper ? b.qs[32 * chunk + lane] >> 4 : b.qs[32 * chunk + lane] & 0xF;
    // Bit 2*chunk of qh[lane] (lower sub-block) or 2*chunk+1 (upper) is the fifth bit.
    const int bit = (b.qh[lane] >> (2 * chunk + (upper ? 1 : 0))) & 1;
    const int sub = e / 32;
    EXPECT_EQ(y[e], 0.5f * kScales[sub] * (low4 + 16 * bit) - 0.25f * kMins[sub]) << e;
  }
  // Spot value: element 33: sub 1 (scale 2, min 6), qs[1] = 5 -> high nibble 0,
  // qh[1] = 48 = 0b110000 -> bit 1 = 0; y = 0 - 0.25*6.
  EXPECT_EQ(y[33], -1.5f);
  // Element 100: chunk 1, upper, lane 4: qs[36] = 180 = 0xB4 -> 11; qh[4] =
  // 159 = 0b10011111 -> bit 3 = 1; sub 3 (scale 4, min 8): 0.5*4*27 - 2 = 52.
  EXPECT_EQ(y[100], 52.0f);
}

TEST(Dequantize, Q6_K) {
  BlockQ6_K b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 7);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 13 + 5);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s - 8);
  auto y = dequant(TensorType::kQ6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, k = (e % 128) / 32, l = e % 32;
    // Quarters 0/1 use low nibbles of ql[64h + l] / ql[64h + 32 + l], quarters
    // 2/3 the high nibbles; bits 2k..2k+1 of qh[32h + l] are the top bits.
    const uint8_t qlb = b.ql[64 * half + l + (k % 2 == 1 ? 32 : 0)];
    const int low4 = k < 2 ? (qlb & 0xF) : (qlb >> 4);
    const int hi2 = (b.qh[32 * half + l] >> (2 * k)) & 3;
    EXPECT_EQ(y[e], 0.5f * b.scales[e / 16] * ((low4 | (hi2 << 4)) - 32)) << e;
  }
  // Element 0: ql[0] = 0, qh[0] = 5 -> top bits 1 -> q = 16 - 32 = -16; scale -8.
  EXPECT_EQ(y[0], 64.0f);
  // Element 200: half 1, quarter 2, lane 8: ql[72] = 248 -> high nibble 15;
  // qh[40] = 13 -> bits 4..5 = 0 -> q = -17; scale[12] = 4.
  EXPECT_EQ(y[200], -34.0f);
}

TEST(Dequantize, Q8_K) {
  BlockQ8_K b{};
  b.d = 0.25f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
  auto y = dequant(TensorType::kQ8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], (j - 128) * 0.25f) << j;
}

TEST(Dequantize, MultipleBlocksAndUnalignedSource) {
  // Two Q8_0 blocks placed at an odd address: rows inside GGUF files need
  // not be aligned for the block struct.
  std::vector<uint8_t> buf(1 + 2 * sizeof(BlockQ8_0));
  BlockQ8_0 b[2]{};
  b[0].d = 0x3C00;
  b[1].d = 0x4000;
  for (int j = 0; j < 32; ++j) b[0].qs[j] = static_cast<int8_t>(j), b[1].qs[j] = static_cast<int8_t>(-j);
  std::memcpy(buf.data() + 1, b, sizeof(b));
  std::vector<float> y(64);
  ASSERT_TRUE(dequantize_row(TensorType::kQ8_0, buf.data() + 1, y.data(), 64).is_ok());
  EXPECT_EQ(y[5], 5.0f);
  EXPECT_EQ(y[32 + 5], -10.0f);
}

TEST(Dequantize, RejectsBadLengthAndUnsupportedTypes) {
  std::vector<uint8_t> src(1024);
  std::vector<float> y(512);
  EXPECT_EQ(dequantize_row(TensorType::kQ4_0, src.data(), y.data(), 33).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize_row(TensorType::kQ4_K, src.data(), y.data(), 128).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize_row(TensorType::kQ2_K, src.data(), y.data(), 256).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(dequantize_row(TensorType::kI32, src.data(), y.data(), 4).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(quantize_row(TensorType::kQ8_1, y.data(), src.data(), 32).code(), StatusCode::kUnimplemented);
}

// ---- round trips -----------------------------------------------------------

struct RoundTripCase {
  TensorType type;
  double max_rel_rmse;  // RMSE / RMS of the data, from the format's step size
};

std::vector<float> test_data(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = u(rng);
  // Blocks with different magnitudes and one all-positive, one all-negative
  // region, so per-block scales and mins are exercised.
  for (size_t i = 512; i < 768 && i < n; ++i) x[i] *= 0.01f;
  for (size_t i = 1024; i < 1280 && i < n; ++i) x[i] = std::fabs(x[i]) + 3.0f;
  for (size_t i = 1536; i < 1792 && i < n; ++i) x[i] = -std::fabs(x[i]) - 2.0f;
  return x;
}

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ErrorIsWithinTheFormatsStep) {
  const auto [type, max_rel_rmse] = GetParam();
  const size_t n = 4096;
  const auto x = test_data(n, 1234);
  std::vector<uint8_t> q(row_bytes(traits_of(type), n));
  ASSERT_TRUE(quantize_row(type, x.data(), q.data(), n).is_ok());
  std::vector<float> y(n);
  ASSERT_TRUE(dequantize_row(type, q.data(), y.data(), n).is_ok());

  // Per 256-element region: RMSE relative to the region's RMS, so the small
  // and offset regions are held to the same relative standard.
  for (size_t r = 0; r < n; r += 256) {
    double se = 0, ss = 0;
    for (size_t i = r; i < r + 256; ++i) {
      se += (x[i] - y[i]) * double(x[i] - y[i]);
      ss += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(se / ss), max_rel_rmse) << tensor_type_name(type) << " region " << r / 256;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, RoundTrip,
    ::testing::Values(RoundTripCase{TensorType::kF32, 0.0}, RoundTripCase{TensorType::kF16, 1e-3},
                      RoundTripCase{TensorType::kBF16, 5e-3}, RoundTripCase{TensorType::kQ8_0, 0.01},
                      RoundTripCase{TensorType::kQ8_K, 0.01}, RoundTripCase{TensorType::kQ5_0, 0.05},
                      RoundTripCase{TensorType::kQ5_1, 0.05}, RoundTripCase{TensorType::kQ4_0, 0.1},
                      RoundTripCase{TensorType::kQ4_1, 0.1}, RoundTripCase{TensorType::kQ6_K, 0.03},
                      RoundTripCase{TensorType::kQ5_K, 0.06}, RoundTripCase{TensorType::kQ4_K, 0.12}),
    [](const auto& p) { return std::string(tensor_type_name(p.param.type)); });

// Max-error bounds from the step sizes (d = amax/levels or range/levels); K-quant errors <= half a step, the
// step being the sub-block's range over nmax, rounded up by at most one 6-bit scale unit.
TEST(RoundTripBounds, MaxErrorPerBlock) {
  const size_t n = 2048;
  const auto x = test_data(n, 99);
  struct Case {
    TensorType type;
    int block;
    double levels;  // d = amax / levels (symmetric) or range / levels (asymmetric)
    bool symmetric;
    // Half a step, except Q4_0/Q5_0: their grid runs from -8d to +7d (or -16d
    // to +15d) with the signed extreme on the -8d end, so a value of the
    // opposite sign and similar magnitude is clipped by up to one step.
    double steps_of_error;
  };
  for (const Case c :
       {Case{TensorType::kQ4_0, 32, 8, true, 1.0}, Case{TensorType::kQ5_0, 32, 16, true, 1.0},
        Case{TensorType::kQ8_0, 32, 127, true, 0.5}, Case{TensorType::kQ4_1, 32, 15, false, 0.5},
        Case{TensorType::kQ5_1, 32, 31, false, 0.5}, Case{TensorType::kQ8_K, 256, 127, true, 0.5}}) {
    std::vector<uint8_t> q(row_bytes(traits_of(c.type), n));
    ASSERT_TRUE(quantize_row(c.type, x.data(), q.data(), n).is_ok());
    std::vector<float> y(n);
    ASSERT_TRUE(dequantize_row(c.type, q.data(), y.data(), n).is_ok());
    for (size_t b = 0; b < n; b += c.block) {
      float lo = x[b], hi = x[b], amax = 0;
      for (int i = 0; i < c.block; ++i) {
        lo = std::min(lo, x[b + i]), hi = std::max(hi, x[b + i]), amax = std::max(amax, std::fabs(x[b + i]));
      }
      const double step = c.symmetric ? amax / c.levels : (hi - lo) / c.levels;
      // f16 rounding of the scale and min moves the grid by ~1e-3 relative.
      const double bound =
          c.steps_of_error * step * 1.01 + 2e-3 * std::max(std::fabs(lo), std::fabs(hi)) / c.levels + 1e-6;
      for (int i = 0; i < c.block; ++i) {
        ASSERT_LE(std::fabs(x[b + i] - y[b + i]), bound)
            << tensor_type_name(c.type) << " element " << b + i << " x=" << x[b + i] << " y=" << y[b + i];
      }
    }
  }
  for (const auto& [type, nmax, sub] :
       {std::tuple{TensorType::kQ4_K, 15, 32}, std::tuple{TensorType::kQ5_K, 31, 32},
        std::tuple{TensorType::kQ6_K, 31, 16}}) {
    std::vector<uint8_t> q(row_bytes(traits_of(type), n));
    ASSERT_TRUE(quantize_row(type, x.data(), q.data(), n).is_ok());
    std::vector<float> y(n);
    ASSERT_TRUE(dequantize_row(type, q.data(), y.data(), n).is_ok());
    for (size_t sb = 0; sb < n; sb += 256) {
      double max_step = 0;
      std::vector<double> steps;
      for (int s = 0; s < 256; s += sub) {
        float lo = 0, hi = 0, amax = 0;
        for (int i = 0; i < sub; ++i) {
          const float v = x[sb + s + i];
          lo = std::min(lo, v), hi = std::max(hi, v), amax = std::max(amax, std::fabs(v));
        }
        // Q6_K is symmetric (amax / 31); Q4_K/Q5_K span [min(lo,0), max(hi,0)].
        const double st = type == TensorType::kQ6_K ? amax / nmax : (hi - lo) / nmax;
        steps.push_back(st);
        max_step = std::max(max_step, st);
      }
      for (int s = 0; s < 256; s += sub) {
        // One 6-bit (or 7-bit for Q6_K) scale unit plus the rounded-up min.
        const double unit = max_step / (type == TensorType::kQ6_K ? 127 : 63);
        const double bound = 0.5 * (steps[s / sub] + 2.5 * unit) + 1e-6;
        for (int i = 0; i < sub; ++i) {
          const size_t e = sb + s + i;
          ASSERT_LE(std::fabs(x[e] - y[e]), bound) << tensor_type_name(type) << " element " << e;
        }
      }
    }
  }
}

TEST(RoundTripBounds, ZerosStayZeroAndQ8KBsums) {
  std::vector<float> zeros(256, 0.0f);
  for (TensorType t :
       {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ8_0,
        TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kQ8_K}) {
    std::vector<uint8_t> q(row_bytes(traits_of(t), 256));
    ASSERT_TRUE(quantize_row(t, zeros.data(), q.data(), 256).is_ok());
    std::vector<float> y(256, 1.0f);
    ASSERT_TRUE(dequantize_row(t, q.data(), y.data(), 256).is_ok());
    for (float v : y) ASSERT_EQ(v, 0.0f) << tensor_type_name(t);
  }
  const auto x = test_data(256, 7);
  BlockQ8_K b{};
  ASSERT_TRUE(quantize_row(TensorType::kQ8_K, x.data(), &b, 256).is_ok());
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += b.qs[16 * g + i];
    EXPECT_EQ(b.bsums[g], sum) << g;
  }
}

TEST(RoundTripBounds, NonFiniteInputDoesNotCrash) {
  std::vector<float> x(256, 1.0f);
  x[3] = std::nanf("");
  x[100] = INFINITY;
  x[200] = -INFINITY;
  for (TensorType t : {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1,
                       TensorType::kQ8_0, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                       TensorType::kQ8_K, TensorType::kF16, TensorType::kBF16}) {
    std::vector<uint8_t> q(row_bytes(traits_of(t), 256));
    EXPECT_TRUE(quantize_row(t, x.data(), q.data(), 256).is_ok());
    std::vector<float> y(256);
    EXPECT_TRUE(dequantize_row(t, q.data(), y.data(), 256).is_ok());
  }
}

}  // namespace
}  // namespace ladder::gguf
