// AMX-INT8 tiles for packed weights (ops/amx.h, matmul_amx-inl.h). Where the
// CPU has no usable AMX these tests say so and skip; the vector kernels they
// compare against keep their own tests on every target
// (packed_weights_test.cc, matmul_test.cc).
#include "ops/amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

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

TEST(Amx, DetectionAgreesWithTheKernel) {
  const AmxSupport& s = amx_support();
  if (!std::ifstream("/proc/cpuinfo")) GTEST_SKIP() << "no /proc/cpuinfo to compare with";
  EXPECT_EQ(s.cpu_tile, cpuinfo_has_flag("amx_tile"));
  EXPECT_EQ(s.cpu_int8, cpuinfo_has_flag("amx_int8"));
  EXPECT_EQ(s.cpu_bf16, cpuinfo_has_flag("amx_bf16"));
  // The kernel lists the flag only when it supports the state, so with the
  // flag present the permission request must succeed.
  if (s.cpu_tile) {
    EXPECT_TRUE(s.usable()) << s.why_not;
  } else {
    EXPECT_FALSE(s.usable());
    EXPECT_FALSE(s.why_not.empty());
  }
}

TEST(Amx, SwitchingOffFallsBackToVectors) {
  set_amx_enabled(false);
  EXPECT_FALSE(amx_int8_active());
  set_amx_enabled(true);
  EXPECT_EQ(amx_int8_active(), amx_support().int8() && active_target_name() == "AVX3_DL");
}

// LADDER_AMX=0 is read once per process, so each setting runs in a fresh
// child process (the "threadsafe" death-test style re-executes the binary):
// the child sets the variable before anything asks whether AMX is active and
// exits with what it then finds (0: no tiles in use, 1: int8 tiles, 2: bf16).
[[noreturn]] void exit_with_amx_use(const char* setting) {
  setenv("LADDER_AMX", setting, 1);
  set_amx_bf16_wanted(true);
  std::exit(amx_int8_active() ? 1 : (amx_bf16_active() ? 2 : 0));
}

TEST(AmxDeathTest, EnvironmentSwitchesTilesOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_amx_use("0"), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(exit_with_amx_use("off"), ::testing::ExitedWithCode(0), "");
  // The control: with the variable set to anything else the tiles are used
  // wherever they can be, so the child really reads the setting.
  if (!amx_support().int8() || active_target_name() != "AVX3_DL") {
    GTEST_SKIP() << "no AMX-INT8 kernels here, so only the off setting was checked";
  }
  EXPECT_EXIT(exit_with_amx_use("1"), ::testing::ExitedWithCode(1), "");
}

struct AmxCase {
  TensorType type;
  int64_t n_in, n_out;
};

// Random weights of a case, packed (pack_weights_always for the int8 types,
// pack_weights for F16/BF16, which pack for tiles while AMX-BF16 is active), and `rows` random
// activation rows with each row's output computed alone (one row per call).
struct Packed {
  std::vector<uint8_t> bytes;
  WeightMatrix wm;
  PackedWeights packed;
  std::vector<float> x, alone;

  Packed(const AmxCase& c, int64_t rows, uint32_t seed, float range) {
    bytes = random_weights(c.type, c.n_in, c.n_out, seed);
    wm = {c.type, bytes.data(), c.n_in, c.n_out};
    ThreadPool pool(2);
    const bool float_type = c.type == TensorType::kF16 || c.type == TensorType::kBF16;
    packed = float_type ? pack_weights(wm, pool) : pack_weights_always(wm, pool);
    x = random_floats(static_cast<size_t>(rows * c.n_in), seed + 1, -range, range);
    alone.resize(static_cast<size_t>(rows * c.n_out));
    ThreadPool one(1);
    for (int64_t r = 0; r < rows; ++r) {
      matmul(wm, packed, x.data() + r * c.n_in, 1, alone.data() + r * c.n_out, one);
    }
  }
};

std::string case_name(const AmxCase& c) {
  return std::string(tensor_type_name(c.type)) + " " + std::to_string(c.n_in) + "x" + std::to_string(c.n_out);
}

// Odd block counts (96: 3 blocks, a partial run; 288: 9), a short last
// column group (40, 33) and every packed format.
const AmxCase kCases[] = {{TensorType::kQ8_0, 96, 40},  {TensorType::kQ8_0, 768, 48},
                       {TensorType::kQ4_0, 288, 33}, {TensorType::kQ4_0, 256, 32},
                       {TensorType::kQ4_K, 512, 40}, {TensorType::kQ5_K, 256, 33},
                       {TensorType::kQ6_K, 768, 24}, {TensorType::kQ6_K, 256, 17}};

// Tiles give the vector kernels' bits exactly: the same integer block sums,
// the same float epilogue. Checked for whole tiles of 16 rows and batches
// with a vector remainder, at 1-3 threads; and each row equals that row
// computed alone (batch invariance across the switch between the paths).
TEST(Amx, PackedMatmulBitIdenticalToVectorsAndBatchInvariant) {
  if (!amx_support().int8()) GTEST_SKIP() << "AMX-INT8 is not usable here: " << amx_support().why_not;
  if (active_target_name() != "AVX3_DL") GTEST_SKIP() << "the AMX kernels come with the AVX3_DL target";
  for (const AmxCase& c : kCases) {
    SCOPED_TRACE(case_name(c));
    // Every row alone runs on vectors (one row never takes the tiles).
    const Packed p(c, 49, 91, 2.0f);
    ASSERT_FALSE(p.packed.empty());
    const WeightMatrix& wm = p.wm;
    const PackedWeights& packed = p.packed;
    const std::vector<float>& x = p.x;
    const std::vector<float>& alone = p.alone;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {16, 17, 32, 49}) {
        std::vector<float> tiles(static_cast<size_t>(rows * c.n_out)), vectors(tiles.size());
        set_amx_enabled(true);
        ASSERT_TRUE(amx_int8_active());
        matmul(wm, packed, x.data(), rows, tiles.data(), pool);
        set_amx_enabled(false);
        matmul(wm, packed, x.data(), rows, vectors.data(), pool);
        set_amx_enabled(true);
        ASSERT_EQ(std::memcmp(tiles.data(), vectors.data(), tiles.size() * sizeof(float)), 0)
            << "rows " << rows << " threads " << threads;
        ASSERT_EQ(std::memcmp(tiles.data(), alone.data(), tiles.size() * sizeof(float)), 0)
            << "rows " << rows << " threads " << threads;
      }
    }
  }
}

// Against the scalar reference (dequantize, double-precision dot products),
// within the bound every integer kernel is held to.
TEST(Amx, PackedMatmulMatchesScalarReference) {
  if (!amx_support().int8()) GTEST_SKIP() << "AMX-INT8 is not usable here: " << amx_support().why_not;
  if (active_target_name() != "AVX3_DL") GTEST_SKIP() << "the AMX kernels come with the AVX3_DL target";
  for (const AmxCase& c : kCases) {
    SCOPED_TRACE(tensor_type_name(c.type));
    const auto w = random_weights(c.type, c.n_in, c.n_out, 93);
    const WeightMatrix wm{c.type, w.data(), c.n_in, c.n_out};
    ThreadPool pool(2);
    const PackedWeights packed = pack_weights_always(wm, pool);
    const int64_t rows = 32;
    const auto x = random_floats(static_cast<size_t>(rows * c.n_in), 94);
    std::vector<float> y(static_cast<size_t>(rows * c.n_out)), ref(y.size());
    matmul(wm, packed, x.data(), rows, y.data(), pool);
    matmul_reference(wm, x.data(), rows, ref.data());
    const auto wf = dequantized(c.type, w.data(), c.n_in, c.n_out);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < c.n_out; ++o) {
        const double bound =
            testing::matmul_error_bound(true, wf.data() + o * c.n_in, x.data() + r * c.n_in, c.n_in);
        ASSERT_NEAR(y[r * c.n_out + o], ref[r * c.n_out + o], bound) << "row " << r << " out " << o;
      }
    }
  }
}

// The tiles' largest integer sums: every Q8_0 weight and activation at
// +-127 (one sign per block), so each block sum reaches 32 * 127 * 127.
TEST(Amx, Q8_0ExtremesBitIdentical) {
  if (!amx_support().int8()) GTEST_SKIP() << "AMX-INT8 is not usable here: " << amx_support().why_not;
  if (active_target_name() != "AVX3_DL") GTEST_SKIP() << "the AMX kernels come with the AVX3_DL target";
  const int64_t n_in = 128, n_out = 16, rows = 16;
  const size_t rb = row_bytes(traits_of(TensorType::kQ8_0), static_cast<size_t>(n_in));
  std::vector<uint8_t> w(rb * n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < n_in / 32; ++b) {
      auto* blk = reinterpret_cast<BlockQ8_0*>(w.data() + o * rb) + b;
      blk->d = 0x3C00;  // 1.0
      for (int i = 0; i < 32; ++i) blk->qs[i] = static_cast<int8_t>((o + b) % 2 == 0 ? 127 : -127);
    }
  }
  const WeightMatrix wm{TensorType::kQ8_0, w.data(), n_in, n_out};
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 32) % 3 == 0 ? -1.0f : 1.0f;
  ThreadPool pool(1);
  const PackedWeights packed = pack_weights_always(wm, pool);
  std::vector<float> tiles(static_cast<size_t>(rows * n_out)), vectors(tiles.size());
  matmul(wm, packed, x.data(), rows, tiles.data(), pool);
  set_amx_enabled(false);
  matmul(wm, packed, x.data(), rows, vectors.data(), pool);
  set_amx_enabled(true);
  EXPECT_EQ(std::memcmp(tiles.data(), vectors.data(), tiles.size() * sizeof(float)), 0);
  // Independently: each block adds +-32 * 127 * 127 * (1 / 127).
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      double want = 0;
      for (int64_t b = 0; b < n_in / 32; ++b) {
        const double sw = (o + b) % 2 == 0 ? 1.0 : -1.0;
        const double sx = (r * (n_in / 32) + b) % 3 == 0 ? -1.0 : 1.0;
        want += sw * sx * 32.0 * 127.0;
      }
      ASSERT_NEAR(tiles[r * n_out + o], want, 1e-3) << "row " << r << " out " << o;
    }
  }
}

// ---- F16/BF16 weights on AMX-BF16 tiles (bf16x3, every batch size) ----

// n_in 8 and 40: padded to whole 32-element steps; 33 and 17 columns: short
// last groups.
const AmxCase kFloatCases[] = {{TensorType::kF16, 8, 33},
                            {TensorType::kF16, 40, 16},
                            {TensorType::kF16, 768, 48},
                            {TensorType::kBF16, 256, 17},
                            {TensorType::kBF16, 96, 32}};

// bf16x3 keeps about 16 significant bits of each product (the dropped xl*wl
// term and x's split are each within 2^-16 of |x w|), then F32 sums.
double bf16x3_bound(const float* w, const float* x, int64_t n_in) {
  double sum_abs = 0;
  for (int64_t k = 0; k < n_in; ++k) sum_abs += std::fabs(static_cast<double>(w[k]) * x[k]);
  return (std::ldexp(1.0, -15) + static_cast<double>(n_in + 2) * 1.2e-7) * sum_abs + 1e-6;
}

// The F16/BF16 tile path is opt-in (LADDER_AMX_BF16=1); these tests ask for
// it themselves, so they run wherever AMX-BF16 is usable.
class AmxBf16 : public ::testing::Test {
 protected:
  void SetUp() override { set_amx_bf16_wanted(true); }
  void TearDown() override { set_amx_bf16_wanted(false); }
};

TEST_F(AmxBf16, FloatWeightsMatchReferenceAndAreBatchInvariant) {
  if (!amx_bf16_active()) {
    const std::string why = amx_support().why_not.empty()
                                ? "switched off (LADDER_AMX=0) or another target"
                                : amx_support().why_not;
    GTEST_SKIP() << "AMX-BF16 is not in use here (" << why
                 << "); F16/BF16 weights run on FMA, tested in matmul_test.cc";
  }
  for (const AmxCase& c : kFloatCases) {
    SCOPED_TRACE(case_name(c));
    const int64_t max_rows = 33;
    const Packed p(c, max_rows, 95, 3.0f);
    ASSERT_FALSE(p.packed.empty());
    EXPECT_EQ(p.packed.bytes, static_cast<size_t>((c.n_out + 15) / 16 * ((c.n_in + 31) / 32)) * 1024);
    const WeightMatrix& wm = p.wm;
    const PackedWeights& packed = p.packed;
    const std::vector<float>& x = p.x;
    const std::vector<float>& alone = p.alone;
    const std::vector<uint8_t>& w = p.bytes;
    const auto wf = dequantized(c.type, w.data(), c.n_in, c.n_out);
    std::vector<float> ref(alone.size());
    matmul_reference(wm, x.data(), max_rows, ref.data());
    for (int64_t r = 0; r < max_rows; ++r) {
      for (int64_t o = 0; o < c.n_out; ++o) {
        const double bound = bf16x3_bound(wf.data() + o * c.n_in, x.data() + r * c.n_in, c.n_in);
        ASSERT_NEAR(alone[r * c.n_out + o], ref[r * c.n_out + o], bound) << "row " << r << " out " << o;
      }
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {2, 16, 17, 33}) {
        std::vector<float> batch(static_cast<size_t>(rows * c.n_out));
        matmul(wm, packed, x.data(), rows, batch.data(), pool);
        ASSERT_EQ(std::memcmp(batch.data(), alone.data(), batch.size() * sizeof(float)), 0)
            << "rows " << rows << " threads " << threads;
      }
    }
  }
}

// In a group with other products (one activation split for all), each
// output equals its own matmul bit for bit.
TEST_F(AmxBf16, GroupedProductsMatchEachAlone) {
  if (!amx_bf16_active())
    GTEST_SKIP() << "AMX-BF16 is not in use here; FMA paths are tested in matmul_test.cc";
  const int64_t n_in = 64;
  const auto wf16 = random_weights(TensorType::kF16, n_in, 20, 97);
  const auto wq8 = random_weights(TensorType::kQ8_0, n_in, 24, 98);
  const WeightMatrix a{TensorType::kF16, wf16.data(), n_in, 20}, b{TensorType::kQ8_0, wq8.data(), n_in, 24};
  ThreadPool pool(2);
  const PackedWeights pa = pack_weights(a, pool), pb = pack_weights_always(b, pool);
  const auto x = random_floats(static_cast<size_t>(18 * n_in), 99);
  std::vector<float> ya(18 * 20), yb(18 * 24), wa(ya.size()), wb(yb.size());
  const MatmulOutput outs[] = {{&a, &pa, ya.data()}, {&b, &pb, yb.data()}};
  matmul_group(outs, x.data(), 18, pool);
  matmul(a, pa, x.data(), 18, wa.data(), pool);
  matmul(b, pb, x.data(), 18, wb.data(), pool);
  EXPECT_EQ(std::memcmp(ya.data(), wa.data(), ya.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(yb.data(), wb.data(), yb.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ladder::ops
